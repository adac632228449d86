package io.relaykit.message;

import io.relaykit.internal.Checks;
import io.relaykit.internal.LengthPrefixed;

/**
 * CloudEvents 1.0 binary content mode on publish: adds the event's attributes to a message as
 * headers, so a consumer that knows CloudEvents and nothing of relaykit reads the event, while
 * relaykit's own envelope travels beside them unchanged (a relaykit consumer decodes it as usual;
 * ids match). Publish the returned message with any {@link Publisher}.
 *
 * <p>Mapping: {@code specversion} is {@code 1.0}; {@code id}, {@code type} and {@code time} are the
 * message's id, type and createdAt (RFC 3339, UTC); {@code source} and the optional {@code subject}
 * are given here (relaykit's envelope has no such fields); {@code datacontenttype} travels as the
 * {@code content-type} header, which the Kafka binding names and which the RabbitMQ transport also
 * copies into the AMQP content-type property. The data is the payload, unchanged.
 *
 * <ul>
 *   <li>Kafka ({@link #kafka}): the CloudEvents Kafka protocol binding, headers {@code ce_*}.
 *   <li>RabbitMQ ({@link #amqp}): AMQP 0-9-1 message headers {@code cloudEvents_*}, the form the
 *       CloudEvents AMQP binding allows for JMS-compatible names. That binding is written for AMQP
 *       1.0 application properties and does not apply to 0-9-1 directly; this is relaykit's
 *       documented reading of it.
 * </ul>
 *
 * <p>Consuming CloudEvents from non-relaykit producers is {@link InboundMapping.Builder#cloudEvents}.
 * No state; O(number of headers).
 */
public final class CloudEvents {
  /** The only spec version written. */
  public static final String SPEC_VERSION = "1.0";
  /** The header that carries {@code datacontenttype} on both transports. */
  public static final String CONTENT_TYPE = "content-type";

  /** The start of every message id {@link #identity} makes. */
  public static final String ID_PREFIX = "ce:";

  private CloudEvents() {}

  /**
   * The relaykit message id of the CloudEvent {@code (source, id)}: CloudEvents 1.0 identifies an
   * event by both, so two sources may use one id for two events. The parts are length-prefixed
   * ({@code ce:<length>:<source><length>:<id>}, lengths in chars), so no choice of source or id
   * can produce another pair's message id: {@code identity("a", "1")} is {@code "ce:1:a1:1"}. This
   * is the id a subscription reading CloudEvents ({@link InboundMapping.Builder#cloudEvents}) gives
   * the event, in binary and structured mode alike: the id the handler, retries, dead letters and
   * idempotency keys see. Use it to find an event's dead letter.
   *
   * @param source the event's {@code source}; not blank
   * @param id the event's {@code id}; not blank
   * @return the message id
   * @throws IllegalArgumentException if either is null or blank
   */
  public static String identity(String source, String id) {
    Checks.requireNonBlank("source", source);
    Checks.requireNonBlank("id", id);
    return ID_PREFIX + LengthPrefixed.encode(source, id);
  }

  /**
   * The message with Kafka binary-mode headers ({@code ce_*}) added.
   *
   * @param message the message to publish
   * @param source the CloudEvents {@code source}, a URI reference
   * @param subject the {@code subject}, or null for none
   * @param dataContentType the {@code datacontenttype}, or null to keep the message's own {@value
   *     #CONTENT_TYPE} header (if any)
   * @return a new message with the same envelope and the attributes as extra headers
   * @throws IllegalArgumentException if {@code message} is null, {@code source} is blank, or
   *     {@code subject} or {@code dataContentType} is blank but not null
   */
  public static Message kafka(Message message, String source, String subject,
      String dataContentType) {
    return binary(message, InboundMapping.KAFKA_CLOUDEVENTS_PREFIX, source, subject,
        dataContentType);
  }

  /**
   * The message with AMQP 0-9-1 headers ({@code cloudEvents_*}) added; see {@link #kafka} for the
   * parameters.
   *
   * @param message the message to publish
   * @param source the CloudEvents {@code source}, a URI reference
   * @param subject the {@code subject}, or null for none
   * @param dataContentType the {@code datacontenttype}, or null to keep the message's own
   * @return a new message with the same envelope and the attributes as extra headers
   * @throws IllegalArgumentException as {@link #kafka} does
   */
  public static Message amqp(Message message, String source, String subject,
      String dataContentType) {
    return binary(message, InboundMapping.AMQP_CLOUDEVENTS_PREFIX, source, subject,
        dataContentType);
  }

  private static Message binary(Message message, String prefix, String source, String subject,
      String dataContentType) {
    Checks.requireNonNull("message", message);
    Checks.requireNonBlank("source", source);
    if (subject != null) {
      Checks.requireNonBlank("subject", subject);
    }
    if (dataContentType != null) {
      Checks.requireNonBlank("dataContentType", dataContentType);
    }
    Message.Builder b = message.toBuilder()
        .header(prefix + "specversion", SPEC_VERSION)
        .header(prefix + "id", message.id())
        .header(prefix + "source", source)
        .header(prefix + "type", message.type())
        .header(prefix + "time", message.createdAt().toString());
    if (subject != null) {
      b.header(prefix + "subject", subject);
    }
    if (dataContentType != null) {
      b.header(CONTENT_TYPE, dataContentType);
    }
    return b.build();
  }
}

package io.relaykit.trace;

import java.util.Objects;

/**
 * What relaykit knows about a publish or a delivery when it asks a {@link TracePropagation} for a
 * span: enough for the OpenTelemetry messaging conventions' attributes. Plain strings, so core
 * stays free of any tracing library; an unknown value is the empty string.
 *
 * <p>Immutable; building one costs a small allocation per publish or handler call, and only when
 * a propagation other than {@link TracePropagation#none()} is in use.
 *
 * @param system the messaging system ({@code kafka}, {@code rabbitmq}, {@code
 *     relaykit-inprocess}, or what a custom transport names); empty if unknown
 * @param destination the queue or topic; not null
 * @param messageId the relaykit message id; empty if unknown
 * @param group the consumer group, for a delivery; empty for a publish
 * @param attempt the delivery attempt, 1 for the first; 0 for a publish
 */
public record SpanInfo(String system, String destination, String messageId, String group,
    int attempt) {

  /**
   * Validates the fields.
   *
   * @param system the messaging system; empty if unknown
   * @param destination the queue or topic
   * @param messageId the message id; empty if unknown
   * @param group the consumer group; empty for a publish
   * @param attempt the delivery attempt; 0 for a publish
   * @throws NullPointerException naming the field that is null
   * @throws IllegalArgumentException if {@code attempt} is negative
   */
  public SpanInfo {
    Objects.requireNonNull(system, "system");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(group, "group");
    if (attempt < 0) {
      throw new IllegalArgumentException("attempt must be >= 0, was " + attempt);
    }
  }

  /**
   * A publish of message {@code messageId} to {@code destination} over {@code system}.
   *
   * @param system the messaging system, empty if unknown
   * @param destination the queue or topic
   * @param messageId the message id
   * @return the info, with no group and attempt 0
   */
  public static SpanInfo publish(String system, String destination, String messageId) {
    return new SpanInfo(system, destination, messageId, "", 0);
  }

  /**
   * A delivery of message {@code messageId} from {@code destination} to {@code group}.
   *
   * @param system the messaging system, empty if unknown
   * @param destination the queue or topic the delivery came from
   * @param messageId the message id
   * @param group the consumer group, empty if unknown
   * @param attempt the delivery attempt, 1 for the first
   * @return the info
   */
  public static SpanInfo delivery(String system, String destination, String messageId,
      String group, int attempt) {
    return new SpanInfo(system, destination, messageId, group, attempt);
  }
}

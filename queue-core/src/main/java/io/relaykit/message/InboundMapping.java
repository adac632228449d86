package io.relaykit.message;

import io.relaykit.internal.Checks;
import io.relaykit.internal.Digests;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.trace.TraceContext;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;

/**
 * How a subscription turns what arrives on a transport into a {@link Message}: relaykit's own
 * envelope ({@link MessageHeaders}), and, when the subscription opts in, foreign messages (written
 * by a plain producer, another framework, Debezium) and CloudEvents in binary mode. Defined once
 * here; every transport calls {@link #decode} with what it knows about the record ({@link
 * Inbound}), so the rules below hold on Kafka and RabbitMQ alike.
 *
 * <p><b>Default.</b> A message without relaykit's envelope is a foreign message, not an
 * undecodable one: the default of {@link SubscriptionSpec} is {@link #standard()} (foreign records
 * accepted, mapped as below, no header named, CloudEvents off). A consumer that dedupes by id must
 * know that a foreign record's id is derived (below); name an id header ({@link Builder#idHeader})
 * when the producer writes one. {@link #relaykitOnly()} is the strict choice for a destination only
 * relaykit writes: a record without {@value MessageHeaders#ID} is dead-lettered as undecodable.
 *
 * <p><b>Foreign mapping</b> (a record without {@value MessageHeaders#ID}):
 *
 * <ul>
 *   <li>id: the value of {@link Builder#idHeader}, else the CloudEvents identity ({@code source}
 *       and {@code id}, see below), else the
 *       transport's stable position ({@link Inbound#position}: {@code topic-partition@offset} on
 *       Kafka; on RabbitMQ the message-id property, else {@code destination@sha256:...} of the
 *       message's timestamp, headers and body, which is the same on every redelivery of the same
 *       bytes and in every group: two identical messages without a message id share an id, so
 *       set one if that matters);
 *   <li>type: the value of {@link Builder#typeHeader}, else the CloudEvents {@code type}, else the
 *       destination (topic or queue);
 *   <li>key: the value of {@link Builder#keyHeader} if named and present, else the transport's key
 *       ({@link Inbound#key}: the Kafka record key; on RabbitMQ the routing key unless the
 *       message came through the default exchange, where the routing key is only the queue name);
 *       a blank key is no key;
 *   <li>createdAt: the CloudEvents {@code time}, else the transport's timestamp (Kafka record
 *       timestamp, AMQP timestamp property), else the receive time;
 *   <li>traceId: derived from the destination and id (a SHA-256 prefix), so it is the same on every
 *       redelivery; schemaVersion 1; every header that is not reserved becomes a user header.
 * </ul>
 *
 * <p>Once decoded, a foreign message travels on as a relaykit message: its retry and dead-letter
 * copies carry the full envelope ({@link Decoded#wire}) beside the original headers, so retries,
 * parking, dead letters and replay treat it exactly as any other, and a replay goes back to the
 * same destination.
 *
 * <p><b>CloudEvents binary mode</b> (when {@link Builder#cloudEvents} is on and {@link
 * Inbound#cloudEventsPrefix} names the transport's prefix: {@code ce_} on Kafka, {@code
 * cloudEvents_} on AMQP 0-9-1): a record carrying {@code <prefix>specversion} maps {@code type}
 * and {@code time} as above, and its identity, {@code source} and {@code id} together (CloudEvents
 * 1.0 identifies an event by both), to the message id {@link CloudEvents#identity} makes ({@code
 * ce:<length>:<source><length>:<id>}): two sources' events with one id are two messages to the
 * handler, to idempotency keys and to the dead-letter stores, and no source can forge another's
 * ids. {@code source}, {@code subject} and every other attribute stay as user headers under their
 * prefixed names, and datacontenttype is the transport's content-type. A malformed CloudEvents
 * attribute (a {@code time} that is not RFC 3339, a blank or over-long {@code id} or {@code
 * source}, an {@code id} without a {@code source} or the reverse, a {@code specversion} other
 * than 1.x) never fails the message: it is ignored (the next rule applies) and counted: in {@link
 * #ignoredAttributes()} and, per record, in {@link Decoded#ignoredAttributes()}, which the
 * transports report as {@link MetricsListener#ignored} with {@link #reportIgnored} (with
 * malformed trace headers).
 *
 * <p><b>CloudEvents structured mode</b> (the same switch; content-type {@code
 * application/cloudevents+json}, parameters allowed: the {@code content-type} header on Kafka,
 * the content-type property on AMQP): the body is one JSON object; its string attributes are read
 * as binary mode's headers (same identity, same rules), {@code datacontenttype} becomes the
 * content-type, and the payload is {@code data_base64} decoded, else a string {@code data}'s
 * UTF-8 bytes, else {@code data}'s JSON text. A body that is not such an object (not UTF-8, bad
 * JSON, a duplicate member, both {@code data} and {@code data_base64}) or that has no data is
 * undecodable and dead-lettered with a reason saying where.
 *
 * <p><b>Bad input</b> is undecodable and dead-lettered with a reason naming the header: a named
 * id, type or key header whose value is blank, longer than {@value #MAX_MAPPED_CHARS} characters,
 * or not valid UTF-8 (the transport reports those in {@link Inbound#invalidHeaders}); an empty
 * body; no id at all. "Undecodable" keeps its meaning: a value relaykit (or a user decoder) cannot
 * make a message of, never a foreign record as such once the subscription accepts them.
 *
 * <p>Immutable apart from the counter; thread-safe. O(number of headers) per record, plus one
 * SHA-256 of the id for a foreign record.
 */
public final class InboundMapping {
  /** The longest id, type or key a named header may carry. */
  public static final int MAX_MAPPED_CHARS = 1024;
  /** The CloudEvents Kafka protocol binding's header prefix. */
  public static final String KAFKA_CLOUDEVENTS_PREFIX = "ce_";
  /**
   * The prefix relaykit uses for CloudEvents attributes in AMQP 0-9-1 headers (the AMQP binding's
   * JMS-compatible form; its AMQP 1.0 application-properties form does not apply to 0-9-1).
   */
  public static final String AMQP_CLOUDEVENTS_PREFIX = "cloudEvents_";

  /** A CloudEvents attribute name (the spec's: lower-case letters and digits, at most 20). */
  private static final Pattern ATTRIBUTE_NAME = Pattern.compile("[a-z0-9]{1,20}");

  private static final InboundMapping RELAYKIT_ONLY =
      new InboundMapping(false, null, null, null, false);

  private final boolean foreign;
  private final String idHeader;
  private final String typeHeader;
  private final String keyHeader;
  private final boolean cloudEvents;
  private final LongAdder ignored = new LongAdder();

  private InboundMapping(boolean foreign, String idHeader, String typeHeader, String keyHeader,
      boolean cloudEvents) {
    this.foreign = foreign;
    this.idHeader = idHeader;
    this.typeHeader = typeHeader;
    this.keyHeader = keyHeader;
    this.cloudEvents = cloudEvents;
  }

  /**
   * Only relaykit's envelope; a record without {@value MessageHeaders#ID} is dead-lettered as
   * undecodable. For destinations that only relaykit writes.
   *
   * @return the strict mapping (shared; its {@link #ignoredAttributes()} never moves, as it reads
   *     no CloudEvents)
   */
  public static InboundMapping relaykitOnly() {
    return RELAYKIT_ONLY;
  }

  /**
   * The default mapping: relaykit's envelope and foreign records, mapped from the transport's
   * position, key and timestamp with no header named and CloudEvents off. Equivalent to {@code
   * foreign().build()}; a new instance each time, so its counter is the subscription's own.
   *
   * @return a new default mapping
   */
  public static InboundMapping standard() {
    return foreign().build();
  }

  /**
   * Accepts relaykit's envelope and foreign records, mapped as the class comment says, with the
   * headers and options the builder names.
   *
   * @return a builder for a foreign-accepting mapping
   */
  public static Builder foreign() {
    return new Builder();
  }

  /**
   * Whether records without relaykit's envelope are accepted.
   *
   * @return true for a {@link #foreign()} mapping
   */
  public boolean acceptsForeign() {
    return foreign;
  }

  /**
   * Whether CloudEvents binary-mode attributes are read.
   *
   * @return true if {@link Builder#cloudEvents} was turned on
   */
  public boolean readsCloudEvents() {
    return cloudEvents;
  }

  /**
   * The header holding a foreign record's id, if one is named.
   *
   * @return the header name, or empty
   */
  public Optional<String> idHeader() {
    return Optional.ofNullable(idHeader);
  }

  /**
   * The header holding a foreign record's type, if one is named.
   *
   * @return the header name, or empty
   */
  public Optional<String> typeHeader() {
    return Optional.ofNullable(typeHeader);
  }

  /**
   * The header holding a foreign record's key, if one is named.
   *
   * @return the header name, or empty
   */
  public Optional<String> keyHeader() {
    return Optional.ofNullable(keyHeader);
  }

  /**
   * Malformed CloudEvents attributes ignored so far by subscriptions using this mapping.
   *
   * @return the count since the mapping was built, across every subscription sharing it
   */
  public long ignoredAttributes() {
    return ignored.sum();
  }

  /**
   * What the transport knows about a record, apart from its headers and body.
   *
   * @param destination the topic or queue it was read from; never null
   * @param position a position that is the same on every redelivery of this record, or null if
   *     the transport has none
   * @param key the transport's key, or null
   * @param timestamp the transport's timestamp, or null
   * @param receivedAt when it was received (the subscription's clock); never null
   * @param invalidHeaders names of headers the transport could not decode as UTF-8 (left out of
   *     the header map); never null
   * @param cloudEventsPrefix the transport's CloudEvents header prefix, or null for none
   */
  public record Inbound(String destination, String position, String key, Instant timestamp,
      Instant receivedAt, Set<String> invalidHeaders, String cloudEventsPrefix) {
    /**
     * What the transport knows about one record, checked.
     *
     * @param destination the topic or queue; not null
     * @param position the stable position, or null
     * @param key the transport's key, or null
     * @param timestamp the transport's timestamp, or null
     * @param receivedAt when it was received; not null
     * @param invalidHeaders names of undecodable headers; not null, copied
     * @param cloudEventsPrefix the CloudEvents header prefix, or null
     * @throws IllegalArgumentException if destination, receivedAt or invalidHeaders is null
     */
    public Inbound {
      Checks.requireNonNull("destination", destination);
      Checks.requireNonNull("receivedAt", receivedAt);
      invalidHeaders = Set.copyOf(Checks.requireNonNull("invalidHeaders", invalidHeaders));
    }
  }

  /**
   * A decoded record.
   *
   * @param message the message
   * @param wire the headers to carry on its retry and dead-letter copies: the record's own for a
   *     relaykit message, the full envelope ({@link MessageHeaders#toWire}) for a foreign one
   * @param foreign whether it was mapped from a foreign record
   * @param ignoredAttributes malformed CloudEvents attributes ignored in this record
   */
  public record Decoded(Message message, Map<String, String> wire, boolean foreign,
      int ignoredAttributes) {

    /**
     * A decoded record from which nothing was ignored.
     *
     * @param message the message
     * @param wire the headers its retry and dead-letter copies carry
     * @param foreign whether it was mapped from a foreign record
     */
    public Decoded(Message message, Map<String, String> wire, boolean foreign) {
      this(message, wire, foreign, 0);
    }

    /**
     * Reports to {@code metrics} what decoding this record ignored: {@link #ignoredAttributes}
     * and the message's malformed trace headers (see {@link
     * InboundMapping#reportIgnored}).
     *
     * @param metrics the listener to report to; not null
     * @param destination the topic or queue the record came from; not null
     */
    public void reportIgnored(MetricsListener metrics, String destination) {
      InboundMapping.reportIgnored(metrics, destination, message, ignoredAttributes);
    }
  }

  /**
   * The one place transports report what a received message carried but relaykit ignored, as
   * {@link MetricsListener#ignored} increments with a bounded reason: {@code ignoredAttributes}
   * malformed CloudEvents attributes ({@link MetricsListener#IGNORED_CLOUDEVENTS_ATTRIBUTE}), a
   * malformed {@code traceparent} ({@link MetricsListener#IGNORED_TRACEPARENT}) and a malformed or
   * cut {@code tracestate} ({@link MetricsListener#IGNORED_TRACESTATE}), read as {@link
   * Message#traceContext()} reads them. Transports call it once per first delivery of a message to
   * a subscription (attempt 1), before the handler. Nothing is reported when nothing was ignored.
   * What the listener throws is contained ({@link MetricsListener#safely}).
   *
   * <p>Cost: one lenient parse of the trace headers (O(their length)), nothing else when they are
   * absent.
   *
   * @param metrics the listener to report to; not null
   * @param destination the topic or queue the message came from; not null
   * @param message the decoded message; its trace headers are read
   * @param ignoredAttributes malformed CloudEvents attributes ignored while decoding it
   * @throws IllegalArgumentException if an argument is null, or {@code ignoredAttributes} is
   *     negative
   */
  public static void reportIgnored(MetricsListener metrics, String destination, Message message,
      int ignoredAttributes) {
    Checks.requireNonNull("metrics", metrics);
    Checks.requireNonNull("destination", destination);
    Checks.requireNonNull("message", message);
    if (ignoredAttributes < 0) {
      throw new IllegalArgumentException("ignoredAttributes must be >= 0, was "
          + ignoredAttributes);
    }
    if (ignoredAttributes > 0) {
      MetricsListener.safely(metrics, m -> m.ignored(destination,
          MetricsListener.IGNORED_CLOUDEVENTS_ATTRIBUTE, ignoredAttributes));
    }
    if (!message.headers().containsKey(TraceContext.TRACEPARENT)) {
      return;
    }
    TraceContext.Read read = message.traceContext();
    if (read.malformedTraceparent()) {
      MetricsListener.safely(metrics, m -> m.ignored(destination,
          MetricsListener.IGNORED_TRACEPARENT, 1));
    }
    if (read.droppedTracestate()) {
      MetricsListener.safely(metrics, m -> m.ignored(destination,
          MetricsListener.IGNORED_TRACESTATE, 1));
    }
  }

  /**
   * Decodes one record.
   *
   * @param wire the record's string headers
   * @param body the record's body
   * @param in what the transport knows about it
   * @return the message and the headers to carry on its copies; a foreign record's id falls back to
   *     a CloudEvents id, then to the transport's position
   * @throws MalformedMessageException naming the header or field when it cannot be a message
   * @throws IllegalArgumentException if {@code wire} or {@code in} is null
   */
  public Decoded decode(Map<String, String> wire, byte[] body, Inbound in) {
    Checks.requireNonNull("wire", wire);
    Checks.requireNonNull("in", in);
    if (!foreign || wire.containsKey(MessageHeaders.ID)) {
      return new Decoded(MessageHeaders.fromWire(wire, in.key(), body), wire, false);
    }
    if (body == null || body.length == 0) {
      throw new MalformedMessageException("empty body: a message needs a payload (a tombstone?)");
    }
    String ceId = null;
    String ceType = null;
    Instant ceTime = null;
    int[] ignoredHere = {0};
    String prefix = in.cloudEventsPrefix();
    if (cloudEvents && prefix != null
        && CloudEventsJson.isStructured(wire.get(CloudEvents.CONTENT_TYPE))) {
      // Structured mode: the attributes come out of the body and read as binary mode's headers.
      CloudEventsJson.Event event = CloudEventsJson.parse(body);
      Map<String, String> merged = new LinkedHashMap<>(wire);
      merged.remove(CloudEvents.CONTENT_TYPE);
      for (Map.Entry<String, String> a : event.attributes().entrySet()) {
        if (a.getKey().equals("datacontenttype")) {
          merged.put(CloudEvents.CONTENT_TYPE, a.getValue());
        } else if (ATTRIBUTE_NAME.matcher(a.getKey()).matches()) {
          merged.put(prefix + a.getKey(), a.getValue());
        } else {
          ignored.increment(); // not a CloudEvents attribute name: never a header
          ignoredHere[0]++;
        }
      }
      merged.putIfAbsent(prefix + "specversion", "");
      wire = merged;
      body = event.data();
      if (body.length == 0) {
        throw new MalformedMessageException("structured CloudEvent without data: a message needs"
            + " a payload");
      }
    }
    if (cloudEvents && prefix != null && wire.containsKey(prefix + "specversion")) {
      String version = wire.get(prefix + "specversion");
      if (version == null || !version.startsWith("1.")) {
        ignored.increment();
        ignoredHere[0]++;
      } else {
        // CloudEvents 1.0 identity is (source, id): an id without its source is no identity.
        String source = attribute(wire, prefix + "source", ignoredHere);
        String id = attribute(wire, prefix + "id", ignoredHere);
        if (id != null && source != null) {
          ceId = CloudEvents.identity(source, id);
        } else if (id != null || source != null) {
          ignored.increment();
          ignoredHere[0]++;
        }
        ceType = attribute(wire, prefix + "type", ignoredHere);
        String time = attribute(wire, prefix + "time", ignoredHere);
        if (time != null) {
          try {
            ceTime = OffsetDateTime.parse(time).toInstant();
          } catch (DateTimeParseException e) {
            ignored.increment();
            ignoredHere[0]++;
          }
        }
      }
    }
    String id = first(mapped(wire, idHeader, in), ceId, in.position());
    if (id == null || id.isBlank()) {
      throw new MalformedMessageException("no id: "
          + (idHeader == null ? "no id header is named" : "header " + idHeader + " is absent")
          + " and the transport gave no position");
    }
    String type = first(mapped(wire, typeHeader, in), ceType, in.destination());
    String key = first(mapped(wire, keyHeader, in), in.key(), null);
    if (key != null && key.isBlank()) {
      key = null;
    }
    Instant created = first(ceTime, in.timestamp(), in.receivedAt());
    Map<String, String> user = new LinkedHashMap<>();
    for (Map.Entry<String, String> h : wire.entrySet()) {
      if (!MessageHeaders.isReserved(h.getKey()) && !h.getKey().isBlank() && h.getValue() != null) {
        user.put(h.getKey(), h.getValue());
      }
    }
    Message message;
    try {
      message = Message.builder().id(id).type(type).key(key).payload(body).headers(user)
          .createdAt(created).traceId(traceIdOf(in.destination(), id)).build();
    } catch (IllegalArgumentException e) {
      throw new MalformedMessageException("invalid message: " + e.getMessage(), e);
    }
    return new Decoded(message, MessageHeaders.toWire(message), true, ignoredHere[0]);
  }

  /**
   * The key {@link #decode} gives a record, read from its headers alone, for a transport that
   * orders records before it decodes them: ordering, the handler and the record's retry and
   * dead-letter copies then all see one key. A relaykit record (one with {@value
   * MessageHeaders#ID}) and a foreign record without {@link Builder#keyHeader} keep {@code
   * transportKey}; a foreign record takes the key header's value when it is present. A value that
   * {@link #decode} refuses (blank, too long) gives {@code transportKey}: such a record is
   * dead-lettered as undecodable, so the key it waited under does not matter.
   *
   * <p>Costs nothing beyond one header look-up when a key header is named, none otherwise.
   *
   * @param header the value of a header by name, or null when absent
   * @param transportKey the transport's key, or null
   * @return the key to order by, or null for none
   * @throws IllegalArgumentException if {@code header} is null
   */
  public String keyOf(java.util.function.UnaryOperator<String> header, String transportKey) {
    Checks.requireNonNull("header", header);
    if (!foreign || keyHeader == null || header.apply(MessageHeaders.ID) != null) {
      return transportKey;
    }
    String v = header.apply(keyHeader);
    if (v == null || v.isBlank() || v.length() > MAX_MAPPED_CHARS) {
      return transportKey == null || transportKey.isBlank() ? null : transportKey;
    }
    return v;
  }

  /** A CloudEvents attribute's value, or null (and counted) when blank or too long. */
  private String attribute(Map<String, String> wire, String name, int[] ignoredHere) {
    String v = wire.get(name);
    if (v != null && (v.isBlank() || v.length() > MAX_MAPPED_CHARS)) {
      ignored.increment();
      ignoredHere[0]++;
      return null;
    }
    return v;
  }

  private static String mapped(Map<String, String> wire, String header, Inbound in) {
    if (header == null) {
      return null;
    }
    if (in.invalidHeaders().contains(header)) {
      throw new MalformedMessageException("header " + header + " is not valid UTF-8");
    }
    String v = wire.get(header);
    if (v == null) {
      return null;
    }
    if (v.isBlank()) {
      throw new MalformedMessageException("header " + header + " is blank: '" + v + "'");
    }
    if (v.length() > MAX_MAPPED_CHARS) {
      throw new MalformedMessageException("header " + header + " is " + v.length()
          + " characters, more than " + MAX_MAPPED_CHARS + ": '" + v.substring(0, 32) + "...'");
    }
    return v;
  }

  @SafeVarargs
  private static <T> T first(T... values) {
    for (T v : values) {
      if (v != null) {
        return v;
      }
    }
    return null;
  }

  /**
   * 32 hex digits from SHA-256 of destination and id: stable across redeliveries. The input is
   * {@code destination \n id} when the destination has no newline (the first newline then ends
   * it, so no id can forge another destination's), else {@code \n <length>: destination id},
   * which no destination without a newline (never blank) can produce.
   */
  static String traceIdOf(String destination, String id) {
    return Digests.sha256Hex(destination.indexOf('\n') < 0 ? destination + "\n" + id
        : "\n" + destination.length() + ":" + destination + id, 16);
  }


  @Override
  public String toString() {
    return foreign ? "InboundMapping[foreign, idHeader=" + idHeader + ", typeHeader=" + typeHeader
        + ", keyHeader=" + keyHeader + ", cloudEvents=" + cloudEvents + "]"
        : "InboundMapping[relaykitOnly]";
  }

  /** Builds a foreign-accepting {@link InboundMapping}. */
  public static final class Builder {
    private String idHeader;
    private String typeHeader;
    private String keyHeader;
    private boolean cloudEvents;

    private Builder() {}

    /**
     * The header holding a foreign record's id.
     *
     * @param name the header name; not blank, not reserved
     * @return this builder
     * @throws IllegalArgumentException if blank or reserved
     */
    public Builder idHeader(String name) {
      this.idHeader = headerName("idHeader", name);
      return this;
    }

    /**
     * The header holding a foreign record's type.
     *
     * @param name the header name; not blank, not reserved
     * @return this builder
     * @throws IllegalArgumentException if blank or reserved
     */
    public Builder typeHeader(String name) {
      this.typeHeader = headerName("typeHeader", name);
      return this;
    }

    /**
     * The header holding a foreign record's key (for AMQP, where there is no key property).
     *
     * @param name the header name; not blank, not reserved
     * @return this builder
     * @throws IllegalArgumentException if blank or reserved
     */
    public Builder keyHeader(String name) {
      this.keyHeader = headerName("keyHeader", name);
      return this;
    }

    /**
     * Whether to read CloudEvents binary-mode attributes; default off.
     *
     * @param on true to read them (with the transport's prefix); malformed ones are ignored and
     *     counted in {@link #ignoredAttributes()}
     * @return this builder
     */
    public Builder cloudEvents(boolean on) {
      this.cloudEvents = on;
      return this;
    }

    /**
     * The mapping.
     *
     * @return a new mapping that accepts foreign records
     */
    public InboundMapping build() {
      return new InboundMapping(true, idHeader, typeHeader, keyHeader, cloudEvents);
    }

    private static String headerName(String field, String name) {
      Checks.requireNonBlank(field, name);
      if (MessageHeaders.isReserved(name)) {
        throw new IllegalArgumentException(field + " must not be a reserved relaykit header, was "
            + name);
      }
      return name;
    }
  }
}

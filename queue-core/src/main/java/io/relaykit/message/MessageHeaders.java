package io.relaykit.message;

import io.relaykit.queue.Priority;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a {@link Message} travels as string headers on a transport (Kafka record headers, AMQP
 * properties): the envelope fields become {@value #RESERVED_PREFIX}-prefixed headers beside the
 * user's own, the key and payload travel in the transport's own key and body. Every transport uses
 * this one mapping, so a message published on one and replayed through another keeps its id and
 * trace id.
 *
 * <p>Also names the headers relaykit adds on the way: attempt counts, failure times and dead-letter
 * reasons. O(number of headers) per call; no state.
 */
public final class MessageHeaders {

  /** Header names starting with this (case-insensitive) belong to relaykit. */
  public static final String RESERVED_PREFIX = "relaykit-";

  public static final String ID = "relaykit-id";
  public static final String TYPE = "relaykit-type";
  public static final String SCHEMA_VERSION = "relaykit-schema-version";
  public static final String CREATED_AT = "relaykit-created-at";
  public static final String EXPIRES_AT = "relaykit-expires-at";
  public static final String PRIORITY = "relaykit-priority";
  public static final String TRACE_ID = "relaykit-trace-id";

  /** Failed attempts so far (our own count; broker delivery counts are not relied on). */
  public static final String ATTEMPT = "relaykit-attempt";
  public static final String FIRST_FAILURE_AT = "relaykit-first-failure-at";
  public static final String LAST_FAILURE_AT = "relaykit-last-failure-at";
  /** When a delayed retry becomes due. */
  public static final String RETRY_AT = "relaykit-retry-at";
  public static final String DEAD_REASON = "relaykit-dead-reason";
  public static final String EXCEPTION_CLASS = "relaykit-exception-class";
  public static final String EXCEPTION_MESSAGE = "relaykit-exception-message";
  /** Where a retried or dead-lettered message came from (topic, queue), to route it back. */
  public static final String SOURCE = "relaykit-source";
  /** The source position (partition and offset, delivery tag) where one exists. */
  public static final String SOURCE_POSITION = "relaykit-source-position";

  private MessageHeaders() {}

  /** The message's envelope fields and user headers as one header map, in a stable order. */
  public static Map<String, String> toWire(Message message) {
    Map<String, String> wire = new LinkedHashMap<>();
    wire.put(ID, message.id());
    wire.put(TYPE, message.type());
    wire.put(SCHEMA_VERSION, Integer.toString(message.schemaVersion()));
    wire.put(CREATED_AT, message.createdAt().toString());
    message.expiresAt().ifPresent(at -> wire.put(EXPIRES_AT, at.toString()));
    wire.put(PRIORITY, message.priority().name());
    wire.put(TRACE_ID, message.traceId());
    wire.putAll(message.headers());
    return wire;
  }

  /**
   * Rebuilds a message from transport headers, key and body. Reserved headers other than the
   * envelope's (attempts, failure data) are left out of the message's user headers; read them from
   * {@code wire} directly.
   *
   * @throws MalformedMessageException naming the header that is missing or invalid, or the field
   *     the message would violate (an empty body)
   * @throws IllegalArgumentException if {@code wire} is null (a caller bug, not a bad message)
   */
  public static Message fromWire(Map<String, String> wire, String key, byte[] body) {
    if (wire == null) {
      throw new IllegalArgumentException("wire must not be null");
    }
    Message.Builder b = Message.builder()
        .id(required(wire, ID))
        .type(required(wire, TYPE))
        .key(key)
        .payload(body)
        .traceId(required(wire, TRACE_ID));
    try {
      b.schemaVersion(Integer.parseInt(required(wire, SCHEMA_VERSION)));
    } catch (NumberFormatException e) {
      throw new MalformedMessageException(
          "header " + SCHEMA_VERSION + " is not an integer: " + wire.get(SCHEMA_VERSION), e);
    }
    b.createdAt(instant(wire, CREATED_AT, true));
    b.expiresAt(instant(wire, EXPIRES_AT, false));
    String priority = wire.get(PRIORITY);
    if (priority != null) {
      try {
        b.priority(Priority.valueOf(priority));
      } catch (IllegalArgumentException e) {
        throw new MalformedMessageException(
            "header " + PRIORITY + " is not a priority: " + priority, e);
      }
    }
    Map<String, String> user = new LinkedHashMap<>();
    for (Map.Entry<String, String> h : wire.entrySet()) {
      if (!isReserved(h.getKey())) {
        user.put(h.getKey(), h.getValue());
      }
    }
    b.headers(user);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new MalformedMessageException("invalid message: " + e.getMessage(), e);
    }
  }

  /** Whether {@code name} is reserved for relaykit. */
  public static boolean isReserved(String name) {
    return name.regionMatches(true, 0, RESERVED_PREFIX, 0, RESERVED_PREFIX.length());
  }

  private static String required(Map<String, String> wire, String name) {
    String value = wire.get(name);
    if (value == null || value.isBlank()) {
      throw new MalformedMessageException("missing header " + name);
    }
    return value;
  }

  private static Instant instant(Map<String, String> wire, String name, boolean required) {
    String value = required ? required(wire, name) : wire.get(name);
    if (value == null) {
      return null;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new MalformedMessageException("header " + name + " is not an instant: " + value, e);
    }
  }
}

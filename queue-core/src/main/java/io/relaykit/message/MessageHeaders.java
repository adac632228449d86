package io.relaykit.message;

import io.relaykit.queue.Priority;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
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

  /** The message id. */
  public static final String ID = "relaykit-id";
  /** The message type. */
  public static final String TYPE = "relaykit-type";
  /** The payload's schema version, a decimal integer. */
  public static final String SCHEMA_VERSION = "relaykit-schema-version";
  /** The creation time, an ISO-8601 instant. */
  public static final String CREATED_AT = "relaykit-created-at";
  /** The expiry, an ISO-8601 instant; absent for none. */
  public static final String EXPIRES_AT = "relaykit-expires-at";
  /** The priority, a {@link Priority} constant's name; absent means NORMAL. */
  public static final String PRIORITY = "relaykit-priority";
  /** The trace id. */
  public static final String TRACE_ID = "relaykit-trace-id";

  /** Failed attempts so far (our own count; broker delivery counts are not relied on). */
  public static final String ATTEMPT = "relaykit-attempt";
  /** When the first attempt failed, an ISO-8601 instant. */
  public static final String FIRST_FAILURE_AT = "relaykit-first-failure-at";
  /** When the latest attempt failed, an ISO-8601 instant. */
  public static final String LAST_FAILURE_AT = "relaykit-last-failure-at";
  /** When a delayed retry becomes due. */
  public static final String RETRY_AT = "relaykit-retry-at";
  /** Why the message was dead-lettered. */
  public static final String DEAD_REASON = "relaykit-dead-reason";
  /** The class name of the exception of the last failed attempt. */
  public static final String EXCEPTION_CLASS = "relaykit-exception-class";
  /** The message of the exception of the last failed attempt. */
  public static final String EXCEPTION_MESSAGE = "relaykit-exception-message";
  /** Where a retried or dead-lettered message came from (topic, queue), to route it back. */
  public static final String SOURCE = "relaykit-source";
  /** The source position (partition and offset, delivery tag) where one exists. */
  public static final String SOURCE_POSITION = "relaykit-source-position";
  /** The consumer group of a dead letter that a consumer gave up on; part of its identity. */
  public static final String GROUP = "relaykit-group";

  private MessageHeaders() {}

  /**
   * The message's envelope fields and user headers as one header map, in a stable order: a new
   * mutable map each call, so a transport may add its own headers to it.
   *
   * @param message the message; not null
   * @return the header map; O(headers)
   */
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
   * @param wire the transport's headers; not null
   * @param key the transport's key, or null for none
   * @param body the transport's body; must not be empty
   * @return the message, its user headers being the unreserved entries of {@code wire}
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

  /**
   * Whether {@code name} is reserved for relaykit.
   *
   * @param name a header name; not null
   * @return true if it starts with {@link #RESERVED_PREFIX}, ignoring case
   */
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
      return parseInstant(value);
    } catch (DateTimeParseException e) {
      throw new MalformedMessageException("header " + name + " is not an instant: " + value, e);
    }
  }

  private static final int[] NANOS_PER_DIGIT = {
      0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1};

  /**
   * {@link Instant#parse}, with a fast path for the form {@link Instant#toString} writes ({@code
   * yyyy-MM-ddTHH:mm:ss[.f]Z}, a year of four digits, one to nine fraction digits): the same
   * instant, without the formatter machinery, which costs more (in time and garbage) than all the
   * rest of decoding a message. Anything else, valid or not, goes to {@link Instant#parse}, so the
   * results and the exceptions are exactly its own.
   */
  static Instant parseInstant(String s) {
    int n = s.length();
    if (n < 20 || n > 30 || s.charAt(4) != '-' || s.charAt(7) != '-' || s.charAt(10) != 'T'
        || s.charAt(13) != ':' || s.charAt(16) != ':' || s.charAt(n - 1) != 'Z'
        || (n > 20 && (n == 21 || s.charAt(19) != '.'))) {
      return Instant.parse(s);
    }
    int year = digits(s, 0, 4);
    int month = digits(s, 5, 2);
    int day = digits(s, 8, 2);
    int hour = digits(s, 11, 2);
    int minute = digits(s, 14, 2);
    int second = digits(s, 17, 2);
    int fraction = n > 20 ? digits(s, 20, n - 21) : 0;
    if (year < 0 || month < 0 || day < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59
        || second < 0 || second > 59 || fraction < 0) {
      return Instant.parse(s); // leap seconds, 24:00, stray characters: its rules, its errors
    }
    long epochDay;
    try {
      epochDay = LocalDate.of(year, month, day).toEpochDay();
    } catch (DateTimeException e) {
      return Instant.parse(s); // no such date: let it say so
    }
    return Instant.ofEpochSecond(epochDay * 86_400 + hour * 3_600 + minute * 60 + second,
        n > 20 ? (long) fraction * NANOS_PER_DIGIT[n - 21] : 0);
  }

  /** The decimal value of {@code count} ASCII digits at {@code from}, or -1 if one is not. */
  private static int digits(String s, int from, int count) {
    int value = 0;
    for (int i = from; i < from + count; i++) {
      int d = s.charAt(i) - '0';
      if (d < 0 || d > 9) {
        return -1;
      }
      value = value * 10 + d;
    }
    return value;
  }
}

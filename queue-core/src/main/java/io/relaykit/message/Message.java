package io.relaykit.message;

import io.relaykit.internal.Checks;
import io.relaykit.queue.Priority;
import io.relaykit.trace.TraceContext;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The envelope every relaykit transport carries: a contract between the team that publishes and the
 * teams that consume, so it changes only compatibly.
 *
 * <ul>
 *   <li>{@code id}: unique per message, stable across retries and redeliveries; dedupe by it (or,
 *       better, by a business key) on the consumer side.
 *   <li>{@code type} and {@code schemaVersion}: what the payload is and which version of its
 *       schema, so a consumer can decode it or dead-letter it with a clear reason.
 *   <li>{@code key}: the ordering and partitioning key (an order id); optional.
 *   <li>{@code headers}: free-form string pairs; names starting with {@value
 *       MessageHeaders#RESERVED_PREFIX} are reserved for relaykit.
 *   <li>{@code createdAt}, optional {@code expiresAt}: a message past its expiry is not delivered.
 *   <li>{@code priority}: a hint for queues that order by it.
 *   <li>{@code traceId}: carried unchanged across publish, retry, dead letter and replay, so
 *       "where did my message go" has an answer (see {@link io.relaykit.monitor.LifecycleListener}).
 * </ul>
 *
 * <p>Immutable and thread-safe; the payload is copied in and out. {@link #toString()} omits the
 * payload, which may hold personal data.
 */
public final class Message {

  private final String id;
  private final String type;
  private final int schemaVersion;
  private final String key;
  private final byte[] payload;
  private final Map<String, String> headers;
  private final Instant createdAt;
  private final Instant expiresAt;
  private final Priority priority;
  private final String traceId;

  private Message(Builder b, String id, Instant createdAt, String traceId) {
    this.id = id;
    this.type = b.type;
    this.schemaVersion = b.schemaVersion;
    this.key = b.key;
    this.payload = b.payload;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
    this.createdAt = createdAt;
    this.expiresAt = b.expiresAt;
    this.priority = b.priority;
    this.traceId = traceId;
  }

  /**
   * A builder with schema version 1 and NORMAL priority; unless set, each build gets a random id, a
   * new trace id and the current time.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A builder holding this message's fields, to derive a changed copy.
   *
   * @return a new builder; changing it does not change this message
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.id = id;
    b.type = type;
    b.schemaVersion = schemaVersion;
    b.key = key;
    b.payload = payload;
    b.headers.putAll(headers);
    b.createdAt = createdAt;
    b.expiresAt = expiresAt;
    b.priority = priority;
    b.traceId = traceId;
    return b;
  }

  /**
   * The message id, stable across retries, redeliveries and replays.
   *
   * @return the id; never blank
   */
  public String id() {
    return id;
  }

  /**
   * What the payload is, named by the publisher ({@code "order.created"}).
   *
   * @return the type; never blank
   */
  public String type() {
    return type;
  }

  /**
   * The version of the payload's schema within its type.
   *
   * @return the version, {@code >= 1}
   */
  public int schemaVersion() {
    return schemaVersion;
  }

  /**
   * The ordering and partitioning key.
   *
   * @return the key (never blank), or empty for none
   */
  public Optional<String> key() {
    return Optional.ofNullable(key);
  }

  /**
   * A copy of the payload bytes.
   *
   * @return a new array on each call: O(payload) per call
   */
  public byte[] payload() {
    return payload.clone();
  }

  /**
   * The payload's size in bytes, without copying it.
   *
   * @return the size, {@code >= 1}
   */
  public int payloadSize() {
    return payload.length;
  }

  /**
   * The payload decoded as UTF-8.
   *
   * @return a new string on each call (malformed bytes become U+FFFD)
   */
  public String payloadUtf8() {
    return new String(payload, StandardCharsets.UTF_8);
  }

  /**
   * User headers, unmodifiable, in insertion order.
   *
   * @return the headers; never null, without reserved names
   */
  public Map<String, String> headers() {
    return headers;
  }

  /**
   * When the message was created, by the publisher's clock.
   *
   * @return the instant; never null
   */
  public Instant createdAt() {
    return createdAt;
  }

  /**
   * After this instant the message is not delivered.
   *
   * @return the expiry, always after {@link #createdAt()}, or empty for never
   */
  public Optional<Instant> expiresAt() {
    return Optional.ofNullable(expiresAt);
  }

  /**
   * A hint for queues that order by priority.
   *
   * @return the priority; {@link Priority#NORMAL} unless set
   */
  public Priority priority() {
    return priority;
  }

  /**
   * The trace id carried unchanged across publish, retry, dead letter and replay.
   *
   * @return the trace id; never blank
   */
  public String traceId() {
    return traceId;
  }

  /**
   * Whether the message is worthless at {@code now} and must not be delivered.
   *
   * @param now the time to judge at; not null
   * @return true if it has an expiry and {@code now} is at or after it
   */
  public boolean isExpiredAt(Instant now) {
    return expiresAt != null && !now.isBefore(expiresAt);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof Message)) {
      return false;
    }
    Message m = (Message) o;
    return schemaVersion == m.schemaVersion
        && id.equals(m.id)
        && type.equals(m.type)
        && Objects.equals(key, m.key)
        && Arrays.equals(payload, m.payload)
        && headers.equals(m.headers)
        && createdAt.equals(m.createdAt)
        && Objects.equals(expiresAt, m.expiresAt)
        && priority == m.priority
        && traceId.equals(m.traceId);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, type, schemaVersion, key, Arrays.hashCode(payload), headers,
        createdAt, expiresAt, priority, traceId);
  }

  @Override
  public String toString() {
    return "Message[id=" + id + ", type=" + type + ", schemaVersion=" + schemaVersion
        + ", key=" + key + ", payloadBytes=" + payload.length + ", headers=" + headers.keySet()
        + ", createdAt=" + createdAt + ", expiresAt=" + expiresAt + ", priority=" + priority
        + ", traceId=" + traceId + "]";
  }

  /**
   * The W3C trace context the message carries in its {@value TraceContext#TRACEPARENT} and
   * {@value TraceContext#TRACESTATE} headers, read leniently ({@link TraceContext#read}): empty
   * when there is none or it is malformed; {@link TraceContext.Read#anythingDropped()} says which.
   *
   * @return what was read; parsed from the headers on each call
   */
  public TraceContext.Read traceContext() {
    return TraceContext.read(headers.get(TraceContext.TRACEPARENT),
        headers.get(TraceContext.TRACESTATE));
  }

  /**
   * A new random trace id: 32 lowercase hex digits, as in W3C Trace Context.
   *
   * @return a new id from {@link ThreadLocalRandom}; not cryptographically random
   */
  public static String newTraceId() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return String.format("%016x%016x", r.nextLong(), r.nextLong());
  }

  /**
   * Builds a {@link Message}. {@link #build()} validates every field and names the one that is
   * wrong. Required: {@code type} and a non-empty {@code payload}.
   */
  public static final class Builder {
    private String id;
    private String type;
    private int schemaVersion = 1;
    private String key;
    private byte[] payload;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private Instant createdAt;
    private Instant expiresAt;
    private Priority priority = Priority.NORMAL;
    private String traceId;

    private Builder() {}

    /**
     * The message id; defaults to a new random UUID at each {@link #build()}.
     *
     * @param id the id, or null for a random UUID; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder id(String id) {
      this.id = id;
      return this;
    }

    /**
     * Sets what the payload is. Required.
     *
     * @param type the type; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder type(String type) {
      this.type = type;
      return this;
    }

    /**
     * Sets the payload's schema version. Default 1.
     *
     * @param schemaVersion the version; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder schemaVersion(int schemaVersion) {
      this.schemaVersion = schemaVersion;
      return this;
    }

    /**
     * The ordering and partitioning key; null for none.
     *
     * @param key the key, or null; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder key(String key) {
      this.key = key;
      return this;
    }

    /**
     * The payload bytes; copied.
     *
     * @param payload the bytes; checked (not null, not empty) by {@link #build()}
     * @return this builder
     */
    public Builder payload(byte[] payload) {
      this.payload = payload == null ? null : payload.clone();
      return this;
    }

    /**
     * The payload as UTF-8 text.
     *
     * @param utf8 the text; checked (not null, not empty) by {@link #build()}
     * @return this builder
     */
    public Builder payload(String utf8) {
      this.payload = utf8 == null ? null : utf8.getBytes(StandardCharsets.UTF_8);
      return this;
    }

    /**
     * Adds or replaces one user header.
     *
     * @param name the header name; checked (not blank, not reserved) by {@link #build()}
     * @param value the value; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder header(String name, String value) {
      headers.put(name, value);
      return this;
    }

    /**
     * Replaces all user headers.
     *
     * @param headers the headers, copied; null clears them
     * @return this builder
     */
    public Builder headers(Map<String, String> headers) {
      this.headers.clear();
      if (headers != null) {
        this.headers.putAll(headers);
      }
      return this;
    }

    /**
     * Creation time; defaults to the system clock at {@link #build()}.
     *
     * @param createdAt the time, or null for the time of {@link #build()}
     * @return this builder
     */
    public Builder createdAt(Instant createdAt) {
      this.createdAt = createdAt;
      return this;
    }

    /**
     * After this instant the message is not delivered; null for never.
     *
     * @param expiresAt the expiry, or null; checked (after the creation time) by {@link #build()}
     * @return this builder
     */
    public Builder expiresAt(Instant expiresAt) {
      this.expiresAt = expiresAt;
      return this;
    }

    /**
     * Sets the priority hint. Default {@link Priority#NORMAL}.
     *
     * @param priority the priority; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder priority(Priority priority) {
      this.priority = priority;
      return this;
    }

    /**
     * The trace id to carry; defaults to a new one. A valid {@code traceparent} header takes
     * precedence: the message's trace id is then that header's (see {@link #traceContext}).
     *
     * @param traceId the trace id, or null for a new one; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder traceId(String traceId) {
      this.traceId = traceId;
      return this;
    }

    /**
     * Carries a W3C trace context: sets the {@value TraceContext#TRACEPARENT} header (and {@value
     * TraceContext#TRACESTATE} when the state is not empty, else removes it) and makes the
     * context's trace id the message's. The headers travel like any user header: through every
     * outbox store and transport, onto retry copies and dead letters, and back on replay.
     *
     * @param context the context to carry; not null
     * @return this builder
     * @throws IllegalArgumentException if {@code context} is null
     */
    public Builder traceContext(TraceContext context) {
      Checks.requireNonNull("context", context);
      headers.put(TraceContext.TRACEPARENT, context.traceparent());
      if (context.traceState().isEmpty()) {
        headers.remove(TraceContext.TRACESTATE);
      } else {
        headers.put(TraceContext.TRACESTATE, context.traceState());
      }
      this.traceId = context.traceId();
      return this;
    }

    /**
     * Checks every field and builds the message.
     *
     * @return a new, immutable message
     * @throws IllegalArgumentException naming the field when the id, type or trace id is blank,
     *     the schema version is below 1, the key is blank (but not null), the payload is missing
     *     or empty, a header name is blank or reserved, a header value is null, or the expiry is
     *     not after the creation time
     */
    public Message build() {
      String builtId = id != null ? id : UUID.randomUUID().toString();
      Checks.requireNonBlank("id", builtId);
      Checks.requireNonBlank("type", type);
      if (schemaVersion < 1) {
        throw new IllegalArgumentException("schemaVersion must be >= 1, was " + schemaVersion);
      }
      if (key != null && key.isBlank()) {
        throw new IllegalArgumentException("key must not be blank (use null for no key)");
      }
      if (payload == null) {
        throw new IllegalArgumentException("payload must not be null");
      }
      if (payload.length == 0) {
        throw new IllegalArgumentException("payload must not be empty");
      }
      for (Map.Entry<String, String> h : headers.entrySet()) {
        Checks.requireNonBlank("header name", h.getKey());
        if (h.getKey().regionMatches(true, 0, MessageHeaders.RESERVED_PREFIX, 0,
            MessageHeaders.RESERVED_PREFIX.length())) {
          throw new IllegalArgumentException("header name " + h.getKey()
              + " is reserved: names starting with " + MessageHeaders.RESERVED_PREFIX
              + " belong to relaykit");
        }
        if (h.getValue() == null) {
          throw new IllegalArgumentException("header " + h.getKey() + " must not be null");
        }
      }
      Checks.requireNonNull("priority", priority);
      Instant created = createdAt != null ? createdAt : Instant.now();
      if (expiresAt != null && !expiresAt.isAfter(created)) {
        throw new IllegalArgumentException(
            "expiresAt must be after createdAt (" + created + "), was " + expiresAt);
      }
      // The relaykit trace id is the traceparent's when one is valid; a malformed one stays a
      // plain header and is otherwise ignored (never a failure: it may come from anywhere).
      String traceparent = headers.get(TraceContext.TRACEPARENT);
      String trace = traceparent == null ? null : TraceContext.read(traceparent, null).context()
          .map(TraceContext::traceId).orElse(null);
      if (trace == null) {
        trace = traceId != null ? traceId : newTraceId();
      }
      Checks.requireNonBlank("traceId", trace);
      return new Message(this, builtId, created, trace);
    }
  }
}

package io.relaykit.codec;

import io.relaykit.message.CloudEvents;
import io.relaykit.message.Message;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Typed payloads on relaykit messages: encodes an object into a {@link Message} and decodes a
 * message's payload back into an object, with the codec chosen per destination.
 *
 * <h2>What a typed message carries</h2>
 * {@link #message} sets the message's {@code type} (the {@code relaykit-type} header on every
 * transport) to the {@linkplain PayloadTypes#nameOf type name} of the object's class, and the
 * {@value CloudEvents#CONTENT_TYPE} header to the codec's content type (the RabbitMQ transport
 * also copies it into the AMQP content-type property). A consumer reads both back before decoding:
 * one handler can take a common supertype and receive each message as the subtype its type
 * names.
 *
 * <h2>Choosing the codec</h2>
 * The codec of a destination is the one {@linkplain Builder#destination set for it}, else the
 * {@linkplain Builder#defaultCodec default}. A subscription may name another codec by its content
 * type ({@link #codec(String)}); the Spring Boot starter's default codec is JSON on Jackson 3.
 *
 * <h2>Failures</h2>
 * Decoding refuses, with a {@link PayloadConversionException} (a permanent failure: a dead letter,
 * not a retry), an empty payload, one larger than {@linkplain Builder#maxPayloadBytes the limit}
 * (before the codec sees it), a content type other than the codec's, a type that does not resolve
 * to the handler's type ({@link PayloadTypes#resolve}), bytes the codec cannot decode, and bytes
 * that decode to null. Its reason names the target type and describes the bytes; it never quotes
 * them. Encoding failures are the caller's and throw {@link IllegalArgumentException} at once.
 *
 * <p>Immutable and thread-safe (the type registry is shared and thread-safe). Cost: one codec call
 * plus O(headers) per message.
 */
public final class Payloads {

  /** The default {@link Builder#maxPayloadBytes}: 8 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;

  private final PayloadCodec defaultCodec;
  private final Map<String, PayloadCodec> byDestination;
  private final Map<String, PayloadCodec> byContentType;
  private final PayloadTypes types;
  private final int maxPayloadBytes;

  private Payloads(Builder b) {
    this.defaultCodec = b.defaultCodec;
    this.byDestination = Map.copyOf(b.byDestination);
    this.byContentType = Map.copyOf(b.byContentType);
    this.types = b.types;
    this.maxPayloadBytes = b.maxPayloadBytes;
  }

  /**
   * A builder; it needs at least a default codec.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Payloads with one codec for every destination, the default type registry and limit.
   *
   * @param codec the codec; not null
   * @return the payloads
   */
  public static Payloads of(PayloadCodec codec) {
    return builder().defaultCodec(codec).build();
  }

  /**
   * The type registry names are recorded and resolved with.
   *
   * @return the registry; shared, thread-safe
   */
  public PayloadTypes types() {
    return types;
  }

  /**
   * The largest payload decoded; a larger one fails without reaching the codec.
   *
   * @return the limit in bytes
   */
  public int maxPayloadBytes() {
    return maxPayloadBytes;
  }

  /**
   * The default codec.
   *
   * @return the codec used where no destination's codec is set
   */
  public PayloadCodec defaultCodec() {
    return defaultCodec;
  }

  /**
   * The codec of {@code destination}: the one set for it, else the default.
   *
   * @param destination the destination; not null
   * @return the codec
   */
  public PayloadCodec codecFor(String destination) {
    return byDestination.getOrDefault(Objects.requireNonNull(destination, "destination"),
        defaultCodec);
  }

  /**
   * The codec whose content type is {@code contentType} (parameters and case ignored), for a
   * subscription that names its codec.
   *
   * @param contentType a content type; not null
   * @return the codec
   * @throws IllegalArgumentException naming the known content types if none matches
   */
  public PayloadCodec codec(String contentType) {
    PayloadCodec codec = byContentType.get(baseType(contentType));
    if (codec == null) {
      throw new IllegalArgumentException("no payload codec for content type '" + contentType
          + "'; known: " + new java.util.TreeSet<>(byContentType.keySet()));
    }
    return codec;
  }

  /**
   * A message for {@code destination} whose payload is {@code value} encoded by the
   * destination's codec, typed as {@linkplain PayloadTypes#nameOf value's class}, with the
   * codec's content type in the {@value CloudEvents#CONTENT_TYPE} header; a random id, a new
   * trace id and the current time.
   *
   * @param destination the destination (it picks the codec); not blank
   * @param key the ordering key, or null for none
   * @param value the object; not null, not a {@link Message}
   * @return the message
   * @throws IllegalArgumentException if the destination or key is blank, the value is a Message,
   *     or the codec cannot encode it (the codec's exception is the cause) or returns no bytes
   */
  public Message message(String destination, String key, Object value) {
    return builder(destination, key, value).build();
  }

  /**
   * {@link #message}, as a builder to add headers, an id, an expiry or a priority before {@link
   * Message.Builder#build()}.
   *
   * @param destination the destination (it picks the codec); not blank
   * @param key the ordering key, or null for none
   * @param value the object; not null, not a {@link Message}
   * @return a builder holding the type, key, payload and content type
   * @throws IllegalArgumentException as {@link #message}
   */
  public Message.Builder builder(String destination, String key, Object value) {
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank");
    }
    Objects.requireNonNull(value, "value must not be null");
    if (value instanceof Message) {
      throw new IllegalArgumentException("value is a Message: append it as a message, not as a"
          + " typed payload");
    }
    PayloadCodec codec = codecFor(destination);
    byte[] bytes;
    try {
      bytes = codec.encode(value);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("payload codec " + codec.contentType() + " cannot encode"
          + " a " + value.getClass().getName() + " for '" + destination + "': " + e, e);
    }
    if (bytes == null || bytes.length == 0) {
      throw new IllegalArgumentException("payload codec " + codec.contentType() + " encoded a "
          + value.getClass().getName() + " into no bytes");
    }
    return Message.builder()
        .type(types.nameOf(value.getClass()))
        .key(key)
        .payload(bytes)
        .header(CloudEvents.CONTENT_TYPE, codec.contentType());
  }

  /**
   * Decodes {@code message}'s payload with {@code destination}'s codec.
   *
   * @param message the message; not null
   * @param destination the destination it came from (it picks the codec); not null
   * @param target the handler's type; not null
   * @param <T> the handler's type
   * @return the object, a {@code target} or the subtype the message's type names; never null
   * @throws PayloadConversionException as {@link #decode(Message, Class, PayloadCodec)}
   */
  public <T> T decode(Message message, String destination, Class<T> target) {
    return decode(message, target, codecFor(destination));
  }

  /**
   * Decodes {@code message}'s payload with {@code codec}: checks the size, the content type (if
   * the message names one it must be the codec's, parameters and case aside) and the type (it
   * must {@linkplain PayloadTypes#resolve resolve} to {@code target}), then decodes.
   *
   * @param message the message; not null
   * @param target the handler's type; not null
   * @param codec the codec; not null
   * @param <T> the handler's type
   * @return the object, a {@code target} or the subtype the message's type names; never null
   * @throws PayloadConversionException naming {@code target}, the payload's length and content
   *     type and the problem, never its bytes
   */
  public <T> T decode(Message message, Class<T> target, PayloadCodec codec) {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(codec, "codec");
    int length = message.payloadSize();
    String contentType = contentTypeHeader(message);
    if (length == 0) {
      throw new PayloadConversionException(target, 0, contentType, "the payload is empty");
    }
    if (length > maxPayloadBytes) {
      throw new PayloadConversionException(target, length, contentType, "the payload is larger"
          + " than the limit of " + maxPayloadBytes + " bytes");
    }
    if (contentType != null && !baseType(contentType).equals(baseType(codec.contentType()))) {
      throw new PayloadConversionException(target, length, contentType, "the subscription's"
          + " codec reads " + codec.contentType());
    }
    Class<? extends T> type;
    try {
      type = types.resolve(message.type(), target);
    } catch (IllegalArgumentException e) {
      throw new PayloadConversionException(target, length, contentType, e.getMessage());
    }
    T value;
    try {
      value = codec.decode(message.payload(), type);
    } catch (RuntimeException | StackOverflowError e) {
      // The codec's message is left out: it often quotes the input.
      throw new PayloadConversionException(target, length, contentType, "the " + codec
          .contentType() + " codec could not decode it as " + type.getName() + " ("
          + e.getClass().getName() + ")");
    }
    if (value == null) {
      throw new PayloadConversionException(target, length, contentType, "it decodes to null");
    }
    if (!target.isInstance(value)) {
      throw new PayloadConversionException(target, length, contentType, "the codec returned a "
          + value.getClass().getName());
    }
    return value;
  }

  /**
   * The message's {@value CloudEvents#CONTENT_TYPE} header, looked up ignoring case.
   *
   * @param message the message; not null
   * @return the content type, or null if the message names none
   */
  public static String contentTypeHeader(Message message) {
    String direct = message.headers().get(CloudEvents.CONTENT_TYPE);
    if (direct != null) {
      return direct;
    }
    for (Map.Entry<String, String> h : message.headers().entrySet()) {
      if (h.getKey().equalsIgnoreCase(CloudEvents.CONTENT_TYPE)) {
        return h.getValue();
      }
    }
    return null;
  }

  private static String baseType(String contentType) {
    int semicolon = contentType.indexOf(';');
    return (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim()
        .toLowerCase(Locale.ROOT);
  }

  /** Builds {@link Payloads}; not thread-safe. */
  public static final class Builder {

    private PayloadCodec defaultCodec;
    private final Map<String, PayloadCodec> byDestination = new LinkedHashMap<>();
    private final Map<String, PayloadCodec> byContentType = new LinkedHashMap<>();
    private PayloadTypes types = new PayloadTypes();
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

    private Builder() {}

    /**
     * The codec of every destination without its own; also known by its content type.
     *
     * @param codec the codec; not null
     * @return this builder
     */
    public Builder defaultCodec(PayloadCodec codec) {
      this.defaultCodec = known(codec);
      return this;
    }

    /**
     * The codec of {@code destination}, for appends to it and for its subscriptions that name
     * none; also known by its content type.
     *
     * @param destination the destination; not blank
     * @param codec the codec; not null
     * @return this builder
     * @throws IllegalArgumentException if the destination is blank
     */
    public Builder destination(String destination, PayloadCodec codec) {
      if (destination == null || destination.isBlank()) {
        throw new IllegalArgumentException("destination must not be blank");
      }
      byDestination.put(destination, known(codec));
      return this;
    }

    /**
     * One more codec, known only by its content type (for subscriptions that name it).
     *
     * @param codec the codec; not null
     * @return this builder
     */
    public Builder codec(PayloadCodec codec) {
      known(codec);
      return this;
    }

    /**
     * The type registry; default an empty one.
     *
     * @param types the registry; not null
     * @return this builder
     */
    public Builder types(PayloadTypes types) {
      this.types = Objects.requireNonNull(types, "types");
      return this;
    }

    /**
     * The largest payload decoded; default {@value #DEFAULT_MAX_PAYLOAD_BYTES}.
     *
     * @param maxPayloadBytes the limit, {@code >= 1}
     * @return this builder
     * @throws IllegalArgumentException if the limit is below 1
     */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      if (maxPayloadBytes < 1) {
        throw new IllegalArgumentException("maxPayloadBytes must be >= 1, was "
            + maxPayloadBytes);
      }
      this.maxPayloadBytes = maxPayloadBytes;
      return this;
    }

    /**
     * Checks and builds.
     *
     * @return the payloads
     * @throws IllegalArgumentException if no default codec was set
     */
    public Payloads build() {
      if (defaultCodec == null) {
        throw new IllegalArgumentException("defaultCodec must be set");
      }
      return new Payloads(this);
    }

    private PayloadCodec known(PayloadCodec codec) {
      Objects.requireNonNull(codec, "codec");
      String contentType = codec.contentType();
      if (contentType == null || contentType.isBlank()) {
        throw new IllegalArgumentException("codec " + codec.getClass().getName()
            + " has no content type");
      }
      // The first codec of a content type answers for it; later ones (another mapper for the
      // same media type, set for one destination) are used only where they are set.
      byContentType.putIfAbsent(baseType(contentType), codec);
      return codec;
    }
  }
}

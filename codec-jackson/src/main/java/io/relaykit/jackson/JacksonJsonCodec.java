package io.relaykit.jackson;

import io.relaykit.codec.PayloadCodec;
import java.util.Objects;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Typed payloads as JSON ({@value #CONTENT_TYPE}), on a Jackson 3 {@link ObjectMapper}.
 *
 * <p>{@link #JacksonJsonCodec()} builds its own {@link JsonMapper} with Jackson's defaults, plus
 * {@link DeserializationFeature#FAIL_ON_TRAILING_TOKENS} (a payload is one JSON value, nothing
 * after it); {@link #JacksonJsonCodec(ObjectMapper)} uses the application's mapper as it is
 * configured (its modules, naming strategy and features), which is what the Spring Boot starter
 * does with the application's {@code JsonMapper} bean. Jackson's polymorphic default typing is not
 * turned on here: the class to build is the handler's type, or the subtype the message's type
 * names ({@link io.relaykit.codec.PayloadTypes#resolve}), never a class named inside the JSON.
 *
 * <p>Thread-safe (Jackson's mappers are). Cost: one Jackson read or write per call. Failures:
 * Jackson's {@code JacksonException} (unchecked) for a value it cannot write or bytes it cannot
 * read; {@link io.relaykit.codec.Payloads} turns a read failure into a permanent failure whose
 * reason keeps only the exception's class name (Jackson's messages quote the input).
 */
public final class JacksonJsonCodec implements PayloadCodec {

  /** The content type written and read: {@code application/json}. */
  public static final String CONTENT_TYPE = "application/json";

  private final ObjectMapper mapper;

  /** A codec on a new {@link JsonMapper} with Jackson's defaults and no trailing tokens. */
  public JacksonJsonCodec() {
    this(JsonMapper.builder().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build());
  }

  /**
   * A codec on {@code mapper}, used as configured.
   *
   * @param mapper the mapper; not null
   * @throws NullPointerException if {@code mapper} is null
   */
  public JacksonJsonCodec(ObjectMapper mapper) {
    this.mapper = Objects.requireNonNull(mapper, "mapper");
  }

  /**
   * The mapper this codec reads and writes with.
   *
   * @return the mapper
   */
  public ObjectMapper mapper() {
    return mapper;
  }

  /**
   * {@value #CONTENT_TYPE}.
   *
   * @return {@value #CONTENT_TYPE}
   */
  @Override
  public String contentType() {
    return CONTENT_TYPE;
  }

  /**
   * {@code value} as UTF-8 JSON.
   *
   * @param value the object; not null
   * @return the JSON bytes
   * @throws tools.jackson.core.JacksonException if Jackson cannot write the value
   */
  @Override
  public byte[] encode(Object value) {
    return mapper.writeValueAsBytes(Objects.requireNonNull(value, "value"));
  }

  /**
   * The JSON in {@code bytes} as a {@code type}.
   *
   * @param bytes UTF-8 (or UTF-16/32, detected) JSON
   * @param type the class to build
   * @param <T> the target type
   * @return the object, or null for JSON {@code null}
   * @throws tools.jackson.core.JacksonException if the bytes are not JSON for a {@code type}
   */
  @Override
  public <T> T decode(byte[] bytes, Class<T> type) {
    return mapper.readValue(bytes, type);
  }
}

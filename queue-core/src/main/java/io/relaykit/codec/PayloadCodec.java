package io.relaykit.codec;

/**
 * Turns objects into the bytes of one content type and back (SPI). Implementations are
 * thread-safe and stateless per call; relaykit calls them on the appending thread and on handler
 * threads.
 *
 * <p>A codec may throw any runtime exception when it cannot encode or decode: {@link Payloads}
 * turns a decode failure into a {@link PayloadConversionException} that keeps only the
 * exception's class name, since codec messages often quote the input (and so the payload).
 */
public interface PayloadCodec {

  /**
   * The content type this codec writes and reads, a media type without parameters ({@code
   * application/json}); recorded in the {@value io.relaykit.message.CloudEvents#CONTENT_TYPE}
   * header of every message it encodes.
   *
   * @return the content type; never blank
   */
  String contentType();

  /**
   * Encodes {@code value}.
   *
   * @param value the object; not null
   * @return its bytes; never null (an empty result is refused by {@link Payloads})
   * @throws RuntimeException if the value cannot be encoded (a type the codec cannot write)
   */
  byte[] encode(Object value);

  /**
   * Decodes {@code bytes} into an instance of {@code type}.
   *
   * @param bytes the payload; not null, not empty
   * @param type the class to build
   * @param <T> the target type
   * @return the object; null only if the bytes encode "nothing" (JSON {@code null}), which {@link
   *     Payloads} refuses
   * @throws RuntimeException if the bytes are not a valid encoding of {@code type}
   */
  <T> T decode(byte[] bytes, Class<T> type);
}

package io.relaykit.codec;

import io.relaykit.retry.PermanentFailureException;
import java.util.Objects;

/**
 * A payload that cannot be turned into the type its handler asked for: undecodable, empty, too
 * large, of another content type, or of a type the handler does not know. A permanent failure (a
 * {@link PermanentFailureException}): the message is dead-lettered at once, not retried, since
 * retrying the same bytes gives the same result.
 *
 * <p>The message names the target type and describes the bytes (their length and content type)
 * and the problem; it never quotes the payload, which may hold personal data, and it carries no
 * cause, since a codec's own exception message often quotes its input. The codec exception's
 * class name is kept in the text.
 */
public class PayloadConversionException extends PermanentFailureException {

  private static final long serialVersionUID = 1L;

  /** The longest type header quoted in a reason; a longer one is cut. */
  static final int MAX_TYPE_CHARS = 200;

  /** The binary name of the class the handler asked for. */
  private final String targetType;
  /** The payload's length in bytes. */
  private final int payloadLength;
  /** The payload's declared content type, or null. */
  private final String contentType;

  /**
   * A conversion failure.
   *
   * @param targetType the class the handler asked for; not null
   * @param payloadLength the payload's length in bytes
   * @param contentType the payload's content type, or null if the message names none
   * @param problem what went wrong, in words that do not quote the payload; not null
   */
  public PayloadConversionException(Class<?> targetType, int payloadLength, String contentType,
      String problem) {
    super(reason(Objects.requireNonNull(targetType, "targetType"), payloadLength, contentType,
        Objects.requireNonNull(problem, "problem")));
    this.targetType = targetType.getName();
    this.payloadLength = payloadLength;
    this.contentType = contentType;
  }

  /**
   * The class name the handler asked for.
   *
   * @return the target type's name
   */
  public String targetType() {
    return targetType;
  }

  /**
   * The payload's length.
   *
   * @return the length in bytes
   */
  public int payloadLength() {
    return payloadLength;
  }

  /**
   * The payload's content type as the message declared it.
   *
   * @return the content type, or null if the message declared none
   */
  public String contentType() {
    return contentType;
  }

  private static String reason(Class<?> target, int length, String contentType, String problem) {
    return "cannot convert the payload to " + target.getName() + " (" + length + " bytes, content"
        + " type " + (contentType == null ? "not given" : quoted(contentType)) + "): " + problem;
  }

  /** {@code s} in quotes, cut to {@link #MAX_TYPE_CHARS} and with control characters replaced. */
  static String quoted(String s) {
    StringBuilder b = new StringBuilder(Math.min(s.length(), MAX_TYPE_CHARS) + 5).append('\'');
    for (int i = 0; i < s.length() && i < MAX_TYPE_CHARS; i++) {
      char c = s.charAt(i);
      b.append(Character.isISOControl(c) ? '?' : c);
    }
    if (s.length() > MAX_TYPE_CHARS) {
      b.append("...");
    }
    return b.append('\'').toString();
  }
}

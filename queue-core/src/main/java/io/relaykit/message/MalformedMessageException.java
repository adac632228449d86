package io.relaykit.message;

import io.relaykit.retry.PermanentFailureException;

/**
 * A message could not be decoded: a missing or invalid envelope header, a body the handler's codec
 * rejects. Permanent: runtimes send such a message to dead letters with this exception's message as
 * the reason, and keep consuming.
 */
public class MalformedMessageException extends PermanentFailureException {
  private static final long serialVersionUID = 1L;

  /**
   * A message that cannot be decoded.
   *
   * @param message why, naming the header or field; becomes the dead letter's reason
   */
  public MalformedMessageException(String message) {
    super(message);
  }

  /**
   * A message that cannot be decoded, because of {@code cause}.
   *
   * @param message why, naming the header or field; becomes the dead letter's reason
   * @param cause the decoding failure (a parse error); may be null
   */
  public MalformedMessageException(String message, Throwable cause) {
    super(message, cause);
  }
}

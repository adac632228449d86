package io.relaykit.retry;

/**
 * Thrown by a handler or sender to say that retrying cannot help: the message is malformed, refers
 * to something that does not exist, or was rejected by a downstream that will reject it again.
 * Every {@link FailureClassifier} built by relaykit treats it (and its subclasses) as {@link
 * FailureClassifier.Kind#PERMANENT}, so the message goes straight to dead letters with this
 * exception's message as part of the reason.
 */
public class PermanentFailureException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * A permanent failure without a cause.
   *
   * @param message why retrying cannot help; becomes part of the dead letter's reason
   */
  public PermanentFailureException(String message) {
    super(message);
  }

  /**
   * A permanent failure caused by {@code cause}.
   *
   * @param message why retrying cannot help; becomes part of the dead letter's reason
   * @param cause the underlying failure; may be null
   */
  public PermanentFailureException(String message, Throwable cause) {
    super(message, cause);
  }
}

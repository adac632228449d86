package io.relaykit.message;

/**
 * A {@link Publisher} could not get a confirm for a message: the broker nacked it, the connection
 * was lost before the confirm, the confirm timed out, or the message was unroutable. Retryable: the
 * message may or may not have reached the broker, so publish it again (consumers dedupe).
 * Refusals that no retry can fix are {@link MessageRejectedException}s instead.
 */
public class PublishException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * A missing confirm without a cause.
   *
   * @param message what failed (nack, lost connection, timeout), naming the destination
   */
  public PublishException(String message) {
    super(message);
  }

  /**
   * A missing confirm caused by {@code cause}.
   *
   * @param message what failed (nack, lost connection, timeout), naming the destination
   * @param cause the client's failure; may be null
   */
  public PublishException(String message, Throwable cause) {
    super(message, cause);
  }
}

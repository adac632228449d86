package io.relaykit.idempotency;

/**
 * An {@link IdempotencyStore} could not reach its backend (connection refused, command timeout).
 * Retryable; a {@link TieredIdempotencyStore} answers from its durable tier instead.
 */
public class IdempotencyUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * The backend could not be reached.
   *
   * @param message what was attempted and where
   * @param cause the client's failure (connection refused, timeout)
   */
  public IdempotencyUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}

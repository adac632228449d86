package io.relaykit.storage.redis;

/**
 * Redis could not be reached, did not answer within the command timeout, or answered with an
 * error. Retryable unless the message says otherwise. Idempotency and journal operations raise the
 * core types instead ({@code IdempotencyUnavailableException}, {@code JournalException}).
 */
public class RedisStorageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * A failure talking to Redis.
   *
   * @param message what failed, naming the operation
   * @param cause Lettuce's exception
   */
  public RedisStorageException(String message, Throwable cause) {
    super(message, cause);
  }
}

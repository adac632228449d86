package io.relaykit.idempotency;

/**
 * Another consumer holds a live claim on the same business key, so this delivery cannot run now.
 * Retryable: the runtime schedules another attempt, by which time the other consumer has completed
 * (the retry then finds DONE and acknowledges) or released or lost its lease (the retry runs).
 */
public class WorkInProgressException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Another consumer holds the key.
   *
   * @param message names the key and the live claim's holder or lease
   */
  public WorkInProgressException(String message) {
    super(message);
  }
}

package io.relaykit.idempotency;

import io.relaykit.internal.Checks;

/**
 * A request's {@code Idempotency-Key} is missing or invalid: answer {@link #status()} (400) with
 * the message, and run nothing.
 */
public final class IdempotencyKeyException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** Why; transient because enums serialize by name anyway and the status is derived. */
  private final transient IdempotencyKeyProtocol.Refusal refusal;

  /**
   * A refusal with a message for the client.
   *
   * @param refusal why; not null
   * @param message the sentence for the client
   * @throws IllegalArgumentException if {@code refusal} is null
   */
  public IdempotencyKeyException(IdempotencyKeyProtocol.Refusal refusal, String message) {
    super(message);
    this.refusal = Checks.requireNonNull("refusal", refusal);
  }

  /**
   * Why the key was refused.
   *
   * @return MISSING_KEY or INVALID_KEY
   */
  public IdempotencyKeyProtocol.Refusal refusal() {
    return refusal;
  }

  /**
   * The HTTP status to answer.
   *
   * @return 400
   */
  public int status() {
    return refusal == null ? 400 : refusal.status();
  }
}

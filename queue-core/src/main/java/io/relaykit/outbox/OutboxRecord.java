package io.relaykit.outbox;

import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import java.time.Instant;

/**
 * One outbox row as a relay sees it after a claim.
 *
 * @param sequence the row's position in the outbox: unique, increasing in append order; per-key
 *     order follows it
 * @param destination where to publish
 * @param message the message to publish
 * @param attempts failed publish attempts so far
 * @param firstFailureAt when the first attempt failed; null if none has
 * @param leaseOwner the relay holding the claim
 * @param leaseExpiresAt when the claim lapses and another relay may take the row
 */
public record OutboxRecord(
    long sequence,
    String destination,
    Message message,
    int attempts,
    Instant firstFailureAt,
    String leaseOwner,
    Instant leaseExpiresAt) {

  /**
   * Checks the components.
   *
   * @param sequence the row's position in the outbox
   * @param destination where to publish; not blank
   * @param message the message; not null
   * @param attempts failed attempts so far, {@code >= 0}
   * @param firstFailureAt when the first attempt failed, or null
   * @param leaseOwner the relay holding the claim; not blank
   * @param leaseExpiresAt when the claim lapses; not null
   * @throws IllegalArgumentException naming the component that is null, blank or negative
   */
  public OutboxRecord {
    Checks.requireNonBlank("destination", destination);
    Checks.requireNonNull("message", message);
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, was " + attempts);
    }
    Checks.requireNonBlank("leaseOwner", leaseOwner);
    Checks.requireNonNull("leaseExpiresAt", leaseExpiresAt);
  }
}

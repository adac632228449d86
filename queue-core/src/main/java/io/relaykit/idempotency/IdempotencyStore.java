package io.relaykit.idempotency;

import java.time.Duration;
import java.util.Optional;

/**
 * Remembers which units of work are done, so a message delivered twice has its effect once. Keyed
 * by the business key ({@code "order-42:sms"}), not the transport's message id: a replay, a retry
 * with a new message id, or a second publisher still maps to the same key.
 *
 * <h2>State machine</h2>
 * <pre>
 *   (absent) --claim--> CLAIMED(token, lease) --complete(token)--> DONE (for the retention period)
 *                         |  \--release(token)--> (absent)
 *                         \--lease expires--> (absent: the next claim gets it)
 * </pre>
 * <ul>
 *   <li>{@link #claim} is atomic: of any number of concurrent callers, at most one gets CLAIMED
 *       while the lease is live; the others get IN_PROGRESS, or DONE once completed.
 *   <li>{@link #complete} and {@link #release} act only if the caller still owns the claim (its
 *       token matches and the lease has not been taken over); they return false otherwise, and
 *       the caller must treat its work as possibly duplicated.
 *   <li>DONE lasts for the store's retention period, then the key is forgotten.
 *   <li>Blank keys, and keys longer than {@link #MAX_KEY_LENGTH}, throw {@link
 *       IllegalArgumentException}; a non-positive lease too.
 * </ul>
 * Thread-safe. A store that cannot reach its backend throws {@link IdempotencyUnavailableException},
 * so a {@link TieredIdempotencyStore} can fall back to its durable tier.
 */
public interface IdempotencyStore {

  /** The longest key every store accepts. */
  int MAX_KEY_LENGTH = 512;

  /** Tries to take ownership of {@code key} for {@code lease}. */
  Claim claim(String key, Duration lease);

  /**
   * Marks the claimed work done for the retention period.
   *
   * @return true if the caller still owned the claim and the key is now DONE
   * @throws IllegalArgumentException if {@code claim} is not a CLAIMED claim
   */
  boolean complete(Claim claim);

  /**
   * Frees a claim after a failure so a retry can run at once.
   *
   * @return true if the caller still owned the claim and it was freed
   * @throws IllegalArgumentException if {@code claim} is not a CLAIMED claim
   */
  boolean release(Claim claim);

  /** The key's current status (CLAIMED for a live lease), or empty if absent; for diagnostics. */
  Optional<Claim.Status> status(String key);
}

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
 *                         |  |  \--release(token)--> (absent)
 *                         |  \--renew(token, lease)--> CLAIMED(token, new lease from now)
 *                         \--lease lapses, then someone claims--> CLAIMED(new token, lease)
 * </pre>
 * <ul>
 *   <li>{@link #claim} is atomic: of any number of concurrent callers, at most one gets CLAIMED
 *       while the lease is live; the others get IN_PROGRESS, or DONE once completed. A claim whose
 *       lease lapsed reads as absent ({@link #status} is empty) and the next {@code claim} takes it
 *       over with a new token.
 *   <li>Fenced by the token, not by time: {@link #complete}, {@link #release} and {@link #renew}
 *       act if the claim was not taken over (its token is still the key's), even after its lease
 *       lapsed, and return false once another caller took the key over (or it was completed or
 *       released). A lapsed claim that nobody took over is remembered for at least the store's
 *       retention after its lease ended; past that it may be forgotten, and complete returns false.
 *   <li>Leases, takeovers and retention are decided on the store's clock (the database's, Redis's),
 *       never by comparing the clocks of different hosts.
 *   <li>DONE lasts for the store's retention period, then the key is forgotten.
 *   <li>Blank keys, and keys longer than {@link #MAX_KEY_LENGTH}, throw {@link
 *       IllegalArgumentException}; a non-positive lease too.
 * </ul>
 *
 * <h2>What a takeover means</h2>
 * A lease is a promise that nobody else starts the work before it ends, not that the first worker
 * stops. When a worker outlives its lease (a GC pause, a slow downstream) and another claims the
 * key, both may be running the effect at once; the first one's {@code complete} then returns false,
 * but its effect has happened. Only {@code renew} (a heartbeat that keeps the lease ahead of the
 * work) avoids this for effects outside the store; only an effect written in the same transaction
 * as the key (e.g. the JDBC store's {@code tryRunOnce}) is fenced itself.
 *
 * <p>Thread-safe. A store that cannot reach its backend throws {@link
 * IdempotencyUnavailableException}, so a {@link TieredIdempotencyStore} can fall back to its
 * durable tier.
 */
public interface IdempotencyStore {

  /** The longest key every store accepts. */
  int MAX_KEY_LENGTH = 512;

  /**
   * Tries to take ownership of {@code key} for {@code lease}, measured on the store's clock.
   *
   * @param key the business key; not blank, at most {@link #MAX_KEY_LENGTH} characters
   * @param lease how long the caller may hold the key; positive
   * @return CLAIMED with a fresh token, IN_PROGRESS if another caller holds a live lease, or DONE
   * @throws IllegalArgumentException if {@code key} is blank or too long, or {@code lease} is not
   *     positive
   * @throws IdempotencyUnavailableException if the backend cannot be reached
   */
  Claim claim(String key, Duration lease);

  /**
   * Marks the claimed work done for the retention period, if the claim was not taken over, even
   * when its lease has lapsed.
   *
   * @param claim a CLAIMED claim this store returned
   * @return true if the caller still owned the claim and the key is now DONE; false if it was
   *     taken over, completed or released (then the work may run, or have run, elsewhere too)
   * @throws IllegalArgumentException if {@code claim} is not a CLAIMED claim
   */
  boolean complete(Claim claim);

  /**
   * Frees a claim after a failure so a retry can run at once, if it was not taken over.
   *
   * @param claim a CLAIMED claim this store returned
   * @return true if the caller still owned the claim and it was freed
   * @throws IllegalArgumentException if {@code claim} is not a CLAIMED claim
   */
  boolean release(Claim claim);

  /**
   * Extends a claim: its lease now ends {@code lease} from now on the store's clock. Works on a
   * claim whose lease lapsed as long as nobody took it over. A heartbeat calls this while long
   * work runs, so the key is not taken over under it.
   *
   * @param claim a CLAIMED claim this store returned
   * @param lease the new lease, measured from now; positive
   * @return true if the caller still owned the claim and its lease was extended; false if it was
   *     taken over, completed or released (stop the heartbeat: another caller may own the key)
   * @throws IllegalArgumentException if {@code claim} is not a CLAIMED claim or {@code lease} is
   *     not positive
   */
  boolean renew(Claim claim, Duration lease);

  /**
   * Writes DONE for {@code key} for the retention period whoever holds it: absent, a live or lapsed
   * claim of anyone, or already DONE. Unfenced on purpose, so only for a store that fronts another
   * one (the fast tier of a {@link TieredIdempotencyStore}) and only after that other store
   * recorded DONE for the key: then nobody can still win the work, and a fast-tier holder (a
   * redelivery, or a claim command that timed out on the client but ran on the server) must not
   * keep the fast tier from answering DONE. A holder's later {@code complete}, {@code release} or
   * {@code renew} then returns false.
   *
   * <p>The default claims the key with a short lease and completes it, so it only succeeds when
   * nobody else holds the key; stores used as a fast tier override it with an unconditional write.
   *
   * @param key the business key; not blank, at most {@link #MAX_KEY_LENGTH} characters
   * @return true if the key is DONE now
   * @throws IllegalArgumentException if {@code key} is blank or too long
   * @throws IdempotencyUnavailableException if the backend cannot be reached
   */
  default boolean markDone(String key) {
    Claim c = claim(key, java.time.Duration.ofSeconds(10));
    return c.status() == Claim.Status.DONE || (c.isClaimed() && complete(c));
  }

  /**
   * The key's current status (CLAIMED for a live lease), or empty if absent; for diagnostics.
   *
   * @param key the business key
   * @return CLAIMED (a live lease, whoever holds it) or DONE; empty if the key is absent, its
   *     lease lapsed, or its retention ended
   * @throws IdempotencyUnavailableException if the backend cannot be reached
   */
  Optional<Claim.Status> status(String key);
}

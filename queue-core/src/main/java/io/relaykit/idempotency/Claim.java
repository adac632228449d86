package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * The answer to {@link IdempotencyStore#claim}: whether the caller may do the work now.
 *
 * @param key the business key claimed
 * @param status CLAIMED (do the work, then complete or release), IN_PROGRESS (someone else holds
 *     a live lease: try later), DONE (already done: skip, acknowledge)
 * @param token proof of ownership for {@link IdempotencyStore#complete} and {@link
 *     IdempotencyStore#release}; present only when CLAIMED
 * @param leaseExpiresAt when a CLAIMED or IN_PROGRESS lease lapses and the key can be claimed
 *     again; null for DONE
 */
public record Claim(String key, Status status, String token, Instant leaseExpiresAt) {

  /** What the caller may do. */
  public enum Status {
    /** The caller owns the key until its lease expires: do the work. */
    CLAIMED,
    /** Another caller owns a live lease: retry later. */
    IN_PROGRESS,
    /** The work was completed; skip it. */
    DONE
  }

  /**
   * Checks the components a status needs.
   *
   * @param key the business key; not blank
   * @param status the outcome; not null
   * @param token the ownership proof; required (not blank) when CLAIMED
   * @param leaseExpiresAt when the lease lapses; required when CLAIMED
   * @throws IllegalArgumentException naming the component that is missing or blank
   */
  public Claim {
    Checks.requireNonBlank("key", key);
    Checks.requireNonNull("status", status);
    if (status == Status.CLAIMED) {
      Checks.requireNonBlank("token", token);
      Checks.requireNonNull("leaseExpiresAt", leaseExpiresAt);
    }
  }

  /**
   * The caller owns {@code key} until {@code leaseExpiresAt}.
   *
   * @param key the business key; not blank
   * @param token the ownership proof; not blank
   * @param leaseExpiresAt when the lease lapses; not null
   * @return a CLAIMED claim
   * @throws IllegalArgumentException if an argument is null or blank
   */
  public static Claim claimed(String key, String token, Instant leaseExpiresAt) {
    return new Claim(key, Status.CLAIMED, token, leaseExpiresAt);
  }

  /**
   * Another caller holds a live lease on {@code key}.
   *
   * @param key the business key; not blank
   * @param leaseExpiresAt when that lease lapses, if known; may be null
   * @return an IN_PROGRESS claim without a token
   * @throws IllegalArgumentException if {@code key} is null or blank
   */
  public static Claim inProgress(String key, Instant leaseExpiresAt) {
    return new Claim(key, Status.IN_PROGRESS, null, leaseExpiresAt);
  }

  /**
   * The work for {@code key} is done.
   *
   * @param key the business key; not blank
   * @return a DONE claim without token or lease
   * @throws IllegalArgumentException if {@code key} is null or blank
   */
  public static Claim done(String key) {
    return new Claim(key, Status.DONE, null, null);
  }

  /**
   * Whether the caller may do the work now.
   *
   * @return true if the status is CLAIMED
   */
  public boolean isClaimed() {
    return status == Status.CLAIMED;
  }

  @Override
  public String toString() {
    // The token is a capability: do not print it.
    return "Claim[key=" + key + ", status=" + status + ", leaseExpiresAt=" + leaseExpiresAt + "]";
  }
}

package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.UUID;

/**
 * The embedded {@link IdempotencyStore}: claims, leases and DONE markers in one JVM's memory, on an
 * injected clock. The reference the contract kit is written against; state is lost with the
 * process, so use it for tests, the demo and single-process deployments whose work is itself
 * in memory.
 *
 * <p>Thread-safe (one lock). Every operation is O(log n) in the number of remembered keys; expired
 * leases and DONE markers past their retention are forgotten as time passes, so memory is bounded
 * by the keys claimed within one lease or retention period.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore {

  private final InstantSource clock;
  private final Duration retention;
  private final Map<String, Entry> entries = new HashMap<>();
  /** Expiry times of entries, oldest first; stale items are skipped when they surface. */
  private final PriorityQueue<Expiry> expiries = new PriorityQueue<>();

  /**
   * @param clock the time leases and retention are measured on
   * @param retention how long a completed key stays DONE
   * @throws IllegalArgumentException if {@code clock} is null or {@code retention} not positive
   */
  public InMemoryIdempotencyStore(InstantSource clock, Duration retention) {
    this.clock = Checks.requireNonNull("clock", clock);
    this.retention = Checks.requirePositive("retention", retention);
  }

  @Override
  public synchronized Claim claim(String key, Duration lease) {
    requireKey(key);
    Checks.requirePositive("lease", lease);
    Instant now = clock.instant();
    forgetExpired(now);
    Entry e = entries.get(key);
    if (e != null && e.done) {
      return Claim.done(key);
    }
    if (e != null) {
      return Claim.inProgress(key, e.expiresAt);
    }
    Entry claimed = new Entry(UUID.randomUUID().toString(), false, now.plus(lease));
    put(key, claimed);
    return Claim.claimed(key, claimed.token, claimed.expiresAt);
  }

  @Override
  public synchronized boolean complete(Claim claim) {
    requireClaimed(claim);
    Instant now = clock.instant();
    forgetExpired(now);
    if (!owns(claim)) {
      return false;
    }
    put(claim.key(), new Entry(null, true, now.plus(retention)));
    return true;
  }

  @Override
  public synchronized boolean release(Claim claim) {
    requireClaimed(claim);
    forgetExpired(clock.instant());
    if (!owns(claim)) {
      return false;
    }
    entries.remove(claim.key());
    return true;
  }

  @Override
  public synchronized Optional<Claim.Status> status(String key) {
    requireKey(key);
    forgetExpired(clock.instant());
    Entry e = entries.get(key);
    if (e == null) {
      return Optional.empty();
    }
    return Optional.of(e.done ? Claim.Status.DONE : Claim.Status.CLAIMED);
  }

  private boolean owns(Claim claim) {
    Entry e = entries.get(claim.key());
    return e != null && !e.done && e.token.equals(claim.token());
  }

  private void put(String key, Entry e) {
    entries.put(key, e);
    expiries.add(new Expiry(e.expiresAt, key, e));
  }

  /** A lease or DONE marker is gone at its expiry instant: the key may be claimed again then. */
  private void forgetExpired(Instant now) {
    Expiry head;
    while ((head = expiries.peek()) != null && !head.at.isAfter(now)) {
      expiries.poll();
      entries.remove(head.key, head.entry);
    }
  }

  private static void requireKey(String key) {
    Checks.requireNonBlank("key", key);
    if (key.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("key must be at most " + MAX_KEY_LENGTH
          + " characters, was " + key.length());
    }
  }

  private static void requireClaimed(Claim claim) {
    Checks.requireNonNull("claim", claim);
    if (!claim.isClaimed()) {
      throw new IllegalArgumentException(
          "claim must be CLAIMED to complete or release it, was " + claim.status());
    }
  }

  private static final class Entry {
    final String token;
    final boolean done;
    final Instant expiresAt;

    Entry(String token, boolean done, Instant expiresAt) {
      this.token = token;
      this.done = done;
      this.expiresAt = expiresAt;
    }
  }

  private record Expiry(Instant at, String key, Entry entry) implements Comparable<Expiry> {
    @Override
    public int compareTo(Expiry o) {
      return at.compareTo(o.at);
    }
  }
}

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
 * <p>Thread-safe (one lock). Every operation is O(log n) in the number of remembered keys. A
 * claim whose lease lapsed stays (so its holder can still complete it) until someone takes it over
 * or until the retention has passed after its lease ended; DONE markers are forgotten after the
 * retention. Memory is bounded by the keys claimed within one lease plus retention period.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore {

  private final InstantSource clock;
  private final Duration retention;
  private final Map<String, Entry> entries = new HashMap<>();
  /** Expiry times of entries, oldest first; stale items are skipped when they surface. */
  private final PriorityQueue<Expiry> expiries = new PriorityQueue<>();

  /**
   * An empty store on {@code clock}, keeping completed keys for {@code retention}.
   *
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
    if (e != null && e.leaseUntil.isAfter(now)) {
      return Claim.inProgress(key, e.leaseUntil);
    }
    Entry claimed = claimedEntry(UUID.randomUUID().toString(), now, lease);
    put(key, claimed);
    return Claim.claimed(key, claimed.token, claimed.leaseUntil);
  }

  @Override
  public synchronized boolean complete(Claim claim) {
    requireClaimed(claim);
    Instant now = clock.instant();
    forgetExpired(now);
    if (!owns(claim)) {
      return false;
    }
    Instant forgetAt = now.plus(retention);
    put(claim.key(), new Entry(null, true, forgetAt, forgetAt));
    return true;
  }

  /** Writes DONE whoever holds the key (see {@link IdempotencyStore#markDone}). */
  @Override
  public synchronized boolean markDone(String key) {
    requireKey(key);
    Instant now = clock.instant();
    forgetExpired(now);
    Entry e = entries.get(key);
    if (e == null || !e.done) {
      Instant forgetAt = now.plus(retention);
      put(key, new Entry(null, true, forgetAt, forgetAt));
    }
    return true;
  }

  @Override
  public synchronized boolean renew(Claim claim, Duration lease) {
    requireClaimed(claim);
    Checks.requirePositive("lease", lease);
    Instant now = clock.instant();
    forgetExpired(now);
    if (!owns(claim)) {
      return false;
    }
    put(claim.key(), claimedEntry(claim.token(), now, lease));
    return true;
  }

  private Entry claimedEntry(String token, Instant now, Duration lease) {
    Instant leaseUntil = now.plus(lease);
    return new Entry(token, false, leaseUntil, leaseUntil.plus(retention));
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
    if (e.done) {
      return Optional.of(Claim.Status.DONE);
    }
    return e.leaseUntil.isAfter(clock.instant()) ? Optional.of(Claim.Status.CLAIMED)
        : Optional.empty();
  }

  private boolean owns(Claim claim) {
    Entry e = entries.get(claim.key());
    return e != null && !e.done && e.token.equals(claim.token());
  }

  private void put(String key, Entry e) {
    entries.put(key, e);
    expiries.add(new Expiry(e.forgetAt, key, e));
  }

  /** An entry is forgotten at its forgetAt instant (DONE: retention; CLAIMED: lease + retention). */
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
    /** When a CLAIMED lease lapses (others may take it over); forgetAt for DONE. */
    final Instant leaseUntil;
    /** When the entry is forgotten altogether. */
    final Instant forgetAt;

    Entry(String token, boolean done, Instant leaseUntil, Instant forgetAt) {
      this.token = token;
      this.done = done;
      this.leaseUntil = leaseUntil;
      this.forgetAt = forgetAt;
    }
  }

  private record Expiry(Instant at, String key, Entry entry) implements Comparable<Expiry> {
    @Override
    public int compareTo(Expiry o) {
      return at.compareTo(o.at);
    }
  }
}

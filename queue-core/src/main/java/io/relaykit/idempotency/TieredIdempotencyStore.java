package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import io.relaykit.retry.Backoff;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Two idempotency stores as one: a fast tier (Redis) that answers repeats without touching the
 * database, and a durable tier (a database unique key) that is the final guard. Every claim that
 * may lead to work is held in the durable tier, so the durable tier alone decides who does the
 * work, and DONE is written there first.
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>No duplicate effect from a fast-tier outage: when the fast tier throws {@link
 *       IdempotencyUnavailableException} the store keeps working on the durable tier alone, and
 *       since every CLAIMED answer holds a durable claim, both modes exclude each other.
 *   <li>The fast tier is tried again after a back-off (one probing call at a time, the others stay
 *       on the durable tier) and used again as soon as it answers.
 *   <li>A fast DONE is written only after the durable DONE, so a fast DONE is trusted; when the
 *       fast tier says CLAIMED but the durable tier says DONE (the fast record expired or was
 *       lost), the answer is DONE and the fast tier is filled in.
 *   <li>Once the durable tier is DONE the fast tier converges to DONE, even when someone else
 *       holds the fast key (a redelivery that took over a lapsed fast lease, or a claim command
 *       that timed out on the client but ran on the server): the fast DONE is written with {@link
 *       IdempotencyStore#markDone}, which overwrites a fast holder, and while the fast tier is down
 *       it is written by the first later call that finds it answering.
 *   <li>{@link #status} answers from the durable tier, which holds every claim.
 * </ul>
 *
 * <h2>Cost</h2>
 * A repeat of done work costs one fast-tier call; a repeat of in-flight work adds a durable read.
 * New work costs a fast claim and a durable claim; completing it a durable and a fast write. While the fast tier is down every call
 * goes to the durable tier, and the fast DONEs it missed (at most {@value #MAX_PENDING_DONE} keys
 * kept) are written afterwards, at most {@value #MAX_DRAIN_PER_CALL} per successful fast-tier
 * call. Configure the fast tier's retention no longer than the durable one's.
 * A durable-tier failure is not masked: it propagates, since no answer is then safe. Thread-safe.
 */
public final class TieredIdempotencyStore implements IdempotencyStore {
  private static final System.Logger LOG =
      System.getLogger(TieredIdempotencyStore.class.getName());

  /** Most keys whose fast DONE waits for the fast tier to come back; more are dropped. */
  static final int MAX_PENDING_DONE = 10_000;
  /** Most pending fast DONEs one call writes, so no caller pays for a whole backlog. */
  static final int MAX_DRAIN_PER_CALL = 64;

  private final IdempotencyStore fast;
  private final IdempotencyStore durable;
  private final InstantSource clock;
  private final Backoff retryFastAfter;
  /** Consecutive fast-tier failures and when to try again; failures == 0 means in use. */
  private final AtomicReference<Health> health = new AtomicReference<>(Health.UP);
  private final AtomicBoolean probing = new AtomicBoolean();
  /** Keys DONE in the durable tier whose fast DONE could not be written yet (fast tier down). */
  private final Set<String> pendingDone = ConcurrentHashMap.newKeySet();
  private final AtomicInteger pendingCount = new AtomicInteger();

  private record Health(int failures, Instant retryAt) {
    static final Health UP = new Health(0, Instant.MIN);
  }

  private enum Mode { USE, PROBE, SKIP }

  /**
   * The fast tier in front of the durable one, which stays the final guard.
   *
   * @param fast the fast tier, which signals an outage with {@link IdempotencyUnavailableException}
   * @param durable the durable tier, the final guard
   * @param clock the time the back-off is measured on
   * @param retryFastAfter the wait before retrying the fast tier after its n-th consecutive failure
   * @throws IllegalArgumentException if an argument is null, or both tiers are the same store
   */
  public TieredIdempotencyStore(IdempotencyStore fast, IdempotencyStore durable,
      InstantSource clock, Backoff retryFastAfter) {
    this.fast = Checks.requireNonNull("fast", fast);
    this.durable = Checks.requireNonNull("durable", durable);
    this.clock = Checks.requireNonNull("clock", clock);
    this.retryFastAfter = Checks.requireNonNull("retryFastAfter", retryFastAfter);
    if (fast == durable) {
      throw new IllegalArgumentException("fast and durable must be different stores");
    }
  }

  /**
   * A tiered store on the system clock that retries the fast tier after 1 s, doubling to at most
   * 30 s while it stays down.
   *
   * @param fast the fast tier (Redis, say), which signals an outage with {@link
   *     IdempotencyUnavailableException}
   * @param durable the durable tier (JDBC, say), the final guard
   * @return a new tiered store
   * @throws IllegalArgumentException if a tier is null, or both are the same store
   */
  public static TieredIdempotencyStore of(IdempotencyStore fast, IdempotencyStore durable) {
    return new TieredIdempotencyStore(fast, durable, InstantSource.system(),
        Backoff.exponential(Duration.ofSeconds(1)).withMax(Duration.ofSeconds(30)));
  }

  /**
   * Whether the fast tier is in use (false while it is down and waiting for its retry).
   *
   * @return true while the fast tier answers; false from its first failure until a retry succeeds
   */
  public boolean fastTierInUse() {
    return health.get().failures() == 0;
  }

  @Override
  public Claim claim(String key, Duration lease) {
    requireKey(key);
    Checks.requirePositive("lease", lease);
    Claim f = onFast(store -> store.claim(key, lease), null, true);
    if (f == null) {
      return durableOnly(key, lease);
    }
    if (f.status() == Claim.Status.DONE) {
      return f; // written only after the durable DONE
    }
    if (f.status() == Claim.Status.IN_PROGRESS) {
      // Usually the holder is working. But a fast claim can outlive its work (a claim command
      // that timed out on the client still ran on the server), so the durable tier, the truth
      // for DONE, is asked before the caller is told to come back later.
      // IN_PROGRESS is a safe answer whatever the durable tier says, so its failure is not one.
      boolean durableDone;
      try {
        durableDone = durable.status(key).orElse(null) == Claim.Status.DONE;
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "durable tier could not confirm an in-progress claim",
            e);
        return f;
      }
      if (!durableDone) {
        return f;
      }
      backfillDone(key); // the fast holder can never win the work: overwrite it with DONE
      return Claim.done(key);
    }
    Claim d;
    try {
      d = durable.claim(key, lease);
    } catch (RuntimeException e) {
      releaseFast(f);
      throw e;
    }
    switch (d.status()) {
      case CLAIMED:
        Instant expires = f.leaseExpiresAt().isBefore(d.leaseExpiresAt())
            ? f.leaseExpiresAt() : d.leaseExpiresAt();
        return Claim.claimed(key, Token.encode(f.token(), d.token()), expires);
      case DONE:
        if (!completeFast(f)) {
          backfillDone(key);
        }
        return d;
      default:
        releaseFast(f);
        return d;
    }
  }

  @Override
  public boolean complete(Claim claim) {
    Token t = Token.decode(claim);
    if (!durable.complete(t.durable(claim))) {
      if (t.fast != null) {
        releaseFast(t.fast(claim));
      }
      return false;
    }
    if (t.fast == null || !completeFast(t.fast(claim))) {
      backfillDone(claim.key());
    }
    return true;
  }

  @Override
  public boolean release(Claim claim) {
    Token t = Token.decode(claim);
    boolean released = durable.release(t.durable(claim));
    if (t.fast != null) {
      releaseFast(t.fast(claim));
    }
    return released;
  }

  /**
   * Renews the durable claim, which decides; the fast claim is renewed as best effort (if that
   * fails, the fast lease lapses and a later claim is answered IN_PROGRESS by the durable tier).
   */
  @Override
  public boolean renew(Claim claim, Duration lease) {
    Token t = Token.decode(claim);
    Checks.requirePositive("lease", lease);
    if (!durable.renew(t.durable(claim), lease)) {
      return false;
    }
    if (t.fast != null) {
      onFast(store -> store.renew(t.fast(claim), lease), false, false);
    }
    return true;
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    requireKey(key);
    return durable.status(key);
  }

  private Claim durableOnly(String key, Duration lease) {
    Claim d = durable.claim(key, lease);
    return d.isClaimed()
        ? Claim.claimed(key, Token.encode(null, d.token()), d.leaseExpiresAt()) : d;
  }

  /** Completes a fast claim; false if that did not make the fast tier say DONE. */
  private boolean completeFast(Claim f) {
    return onFast(store -> store.complete(f), false, false);
  }

  /** Frees a fast claim; when the fast tier is down it lapses with its lease instead. */
  private void releaseFast(Claim f) {
    onFast(store -> store.release(f), false, false);
  }

  /**
   * Makes the fast tier say DONE for a key the durable tier completed, so repeats stop at the
   * fast tier. Uses {@link IdempotencyStore#markDone}, which overwrites whoever holds the fast key:
   * a redelivery that claimed it, or a claim command that timed out on the client but ran on the
   * server (nobody would ever complete or release that one). While the fast tier is down the key
   * is remembered (at most {@link #MAX_PENDING_DONE}) and written by the next call that finds the
   * fast tier answering; a failure that is not an outage is logged and the key dropped, since the
   * durable tier still answers DONE for it. Each successful fast-tier call writes at most {@link
   * #MAX_DRAIN_PER_CALL} of the remembered keys.
   */
  private void backfillDone(String key) {
    Boolean written = onFast(store -> store.markDone(key), null, false);
    if (written == null) { // skipped or failed
      remember(key);
      if (fastTierInUse()) { // it failed otherwise than by an outage, or came back meanwhile
        drainPending();
      }
    }
  }

  private void remember(String key) {
    if (pendingCount.incrementAndGet() > MAX_PENDING_DONE) {
      pendingCount.decrementAndGet();
      LOG.log(System.Logger.Level.DEBUG, "more than {0} fast DONE writes pending; dropped {1}",
          MAX_PENDING_DONE, key);
      return;
    }
    if (!pendingDone.add(key)) {
      pendingCount.decrementAndGet();
    }
  }

  /**
   * Writes up to {@link #MAX_DRAIN_PER_CALL} pending fast DONEs after the fast tier answered;
   * stops at the next outage (the key stays pending).
   */
  private void drainPending() {
    int budget = MAX_DRAIN_PER_CALL;
    for (String key : pendingDone) {
      if (budget-- == 0) {
        return;
      }
      if (!pendingDone.remove(key)) {
        continue;
      }
      pendingCount.decrementAndGet();
      try {
        fast.markDone(key);
      } catch (IdempotencyUnavailableException e) {
        remember(key);
        return; // the next call that reaches the fast tier finds out and backs off
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fast idempotency tier failed to record a pending "
            + "DONE; the durable tier has the answer", e);
      }
    }
  }

  /**
   * Runs {@code op} on the fast tier unless it is down; {@code whenDown} if it is, or if it fails
   * now. Other failures propagate when {@code strict}, else are logged: best-effort upkeep after
   * the durable tier has answered must not turn a done job into a failed one.
   */
  private <T> T onFast(Function<IdempotencyStore, T> op, T whenDown, boolean strict) {
    Mode mode = enter();
    if (mode == Mode.SKIP) {
      return whenDown;
    }
    try {
      T result = op.apply(fast);
      succeeded(mode);
      if (!pendingDone.isEmpty()) {
        drainPending();
      }
      return result;
    } catch (IdempotencyUnavailableException e) {
      failed(mode, e);
      return whenDown;
    } catch (RuntimeException e) {
      if (strict) {
        throw e;
      }
      LOG.log(System.Logger.Level.WARNING, "fast idempotency tier failed an upkeep call; the "
          + "durable tier has the answer", e);
      return whenDown;
    } finally {
      if (mode == Mode.PROBE) {
        probing.set(false);
      }
    }
  }

  private Mode enter() {
    Health h = health.get();
    if (h.failures() == 0) {
      return Mode.USE;
    }
    if (clock.instant().isBefore(h.retryAt())) {
      return Mode.SKIP;
    }
    return probing.compareAndSet(false, true) ? Mode.PROBE : Mode.SKIP;
  }

  private void succeeded(Mode mode) {
    if (mode == Mode.PROBE) {
      Health before = health.getAndSet(Health.UP);
      LOG.log(System.Logger.Level.INFO, "fast idempotency tier is back after {0} failed "
          + "attempt(s); using it again", before.failures());
    }
  }

  private void failed(Mode mode, IdempotencyUnavailableException e) {
    Instant now = clock.instant();
    Health after = health.updateAndGet(h -> {
      if (mode == Mode.USE && h.failures() > 0) {
        return h; // another caller already took it down; do not stretch the back-off
      }
      int failures = h.failures() + 1;
      return new Health(failures, now.plus(retryFastAfter.delay(failures)));
    });
    LOG.log(System.Logger.Level.WARNING, "fast idempotency tier unavailable ({0}); using the "
        + "durable tier alone until {1}", e.getMessage(), after.retryAt());
  }

  private static void requireKey(String key) {
    Checks.requireNonBlank("key", key);
    if (key.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("key must be at most " + MAX_KEY_LENGTH
          + " characters, was " + key.length());
    }
  }

  /**
   * The tiers' tokens packed into one: {@code -|durable} without a fast claim, else {@code
   * <length>:<fast>|<durable>}; exact for any token content.
   */
  private static final class Token {
    final String fast;
    final String durable;

    private Token(String fast, String durable) {
      this.fast = fast;
      this.durable = durable;
    }

    static String encode(String fast, String durable) {
      return (fast == null ? "-" : fast.length() + ":" + fast) + "|" + durable;
    }

    static Token decode(Claim claim) {
      if (claim == null) {
        throw new IllegalArgumentException("claim must not be null");
      }
      if (!claim.isClaimed()) {
        throw new IllegalArgumentException(
            "claim must be CLAIMED to complete or release it, was " + claim.status());
      }
      String t = claim.token();
      if (t.startsWith("-|") && t.length() > 2) {
        return new Token(null, t.substring(2));
      }
      int colon = t.indexOf(':');
      try {
        int len = Integer.parseInt(t, 0, colon, 10);
        int bar = colon + 1 + len;
        if (len > 0 && bar < t.length() - 1 && t.charAt(bar) == '|') {
          return new Token(t.substring(colon + 1, bar), t.substring(bar + 1));
        }
      } catch (RuntimeException e) {
        // fall through: not one of ours
      }
      // A token this store never issued owns nothing; an empty durable token matches no claim.
      return new Token(null, "foreign:" + t);
    }

    Claim fast(Claim claim) {
      return Claim.claimed(claim.key(), fast, claim.leaseExpiresAt());
    }

    Claim durable(Claim claim) {
      return Claim.claimed(claim.key(), durable, claim.leaseExpiresAt());
    }
  }
}

package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link IdempotencyStore} keeps, as a suite: subclass it, implement {@link
 * #createStore}, and the store is checked against every sentence of the SPI's Javadoc.
 *
 * <h2>Time</h2>
 * By default the kit passes a {@link FakeClock} to {@link #createStore} and moves it with {@link
 * #advance}. A backend whose expiry runs on server time (Redis {@code PX}, a database's {@code
 * now()}) ignores the clock and overrides {@link #clock()} (to {@link InstantSource#system()}),
 * {@link #advance} (to {@link Await#elapsed}), {@link #lease()} and {@link #retention()} (to short
 * real durations such as 300 ms and 600 ms) and {@link #clockTolerance()} (how far the server's clock
 * may be from this JVM's).
 *
 * <p>Every test gets a fresh store; keys carry a random suffix, so a shared backend is fine.
 */
public abstract class IdempotencyStoreContract {

  /** For a subclass that binds the kit to one backend. */
  protected IdempotencyStoreContract() {}

  private final FakeClock fakeClock = new FakeClock();
  private IdempotencyStore store;
  private final String prefix = "tck-" + UUID.randomUUID() + ":";

  /**
   * A new, empty store on {@code clock} (ignored by real-time backends), keeping DONE keys for
   * {@code retention}; called before every test.
   *
   * @param clock the clock the store decides leases and retention on, from {@link #clock()}
   * @param retention how long the store keeps DONE keys, from {@link #retention()}
   * @return a store the kit's keys are new to
   */
  protected abstract IdempotencyStore createStore(InstantSource clock, Duration retention);

  /**
   * The clock the kit hands to {@link #createStore} and reads "now" from.
   *
   * @return the kit's {@link FakeClock} by default; {@link InstantSource#system()} for real-time
   *     backends
   */
  protected InstantSource clock() {
    return fakeClock;
  }

  /**
   * Makes at least {@code duration} pass on the store's clock: moves the fake clock by default,
   * and waits it out (with {@link Await#elapsed}) on real-time backends.
   *
   * @param duration how much time must pass
   */
  protected void advance(Duration duration) {
    fakeClock.advance(duration);
  }

  /**
   * The lease the kit claims with; short enough to wait out on real-time backends.
   *
   * @return 30 s by default
   */
  protected Duration lease() {
    return Duration.ofSeconds(30);
  }

  /**
   * The DONE retention the kit asks for; at least twice {@link #lease()}.
   *
   * @return 10 minutes by default
   */
  protected Duration retention() {
    return Duration.ofMinutes(10);
  }

  /**
   * Another store on the same backend as {@link #store()}, standing for a second host whose own
   * clock reads {@code hostClock} while the backend's clock stays {@link #clock()} (a JDBC store on
   * {@code DatabaseClock.of(clock())} with {@code hostClock} as its application clock; a Redis
   * store whose host clock is {@code hostClock}). Empty (the default) where the backend has no
   * hosts apart from itself, as the in-memory store: then the "one clock" cases do not apply.
   *
   * @param hostClock the second host's own clock, which the backend must not decide time on
   * @return the second host's store, or empty to skip the "one clock" cases
   */
  protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
    return Optional.empty();
  }

  /**
   * How far the store's lease times may be from {@link #clock()}'s.
   *
   * @return zero by default (the fake clock); the allowed skew of the server's clock otherwise
   */
  protected Duration clockTolerance() {
    return Duration.ZERO;
  }

  @BeforeEach
  void createFreshStore() {
    store = createStore(clock(), retention());
  }

  /**
   * The store under test.
   *
   * @return this test's store, from {@link #createStore}
   */
  protected IdempotencyStore store() {
    return store;
  }

  private String key(String name) {
    return prefix + name;
  }

  @Nested
  @DisplayName("claim")
  class ClaimCases {

    @Test
    @DisplayName("an absent key is CLAIMED with a token and a lease ending lease-time from now")
    void absentKeyIsClaimed() {
      Instant before = clock().instant();
      Claim c = store.claim(key("a"), lease());
      Instant after = clock().instant();

      assertThat(c.status()).isEqualTo(Claim.Status.CLAIMED);
      assertThat(c.key()).isEqualTo(key("a"));
      assertThat(c.token()).isNotBlank();
      assertThat(c.leaseExpiresAt())
          .isBetween(before.plus(lease()).minus(clockTolerance()),
              after.plus(lease()).plus(clockTolerance()));
      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("a key with a live lease is IN_PROGRESS for everyone else, with the holder's"
        + " expiry")
    void liveLeaseIsInProgress() {
      Claim first = store.claim(key("a"), lease());
      Claim second = store.claim(key("a"), lease());

      assertThat(second.status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(second.token()).isNull();
      assertThat(Duration.between(first.leaseExpiresAt(), second.leaseExpiresAt()).abs())
          .as("IN_PROGRESS carries the holder's lease expiry")
          .isLessThanOrEqualTo(clockTolerance());
      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("claims hand out distinct tokens")
    void tokensAreDistinct() {
      Claim first = store.claim(key("a"), lease());
      assertThat(store.release(first)).isTrue();
      Claim second = store.claim(key("a"), lease());

      assertThat(second.isClaimed()).isTrue();
      assertThat(second.token()).isNotEqualTo(first.token());
    }

    @Test
    @DisplayName("keys are independent: claiming one does not touch another")
    void keysAreIndependent() {
      store.claim(key("a"), lease());

      assertThat(store.claim(key("b"), lease()).status()).isEqualTo(Claim.Status.CLAIMED);
      assertThat(store.status(key("c"))).isEmpty();
    }

    @Test
    @DisplayName("an absent key has no status")
    void absentHasNoStatus() {
      assertThat(store.status(key("never"))).isEqualTo(Optional.empty());
    }

    @Test
    @DisplayName("a key of exactly MAX_KEY_LENGTH characters is accepted")
    void longestKeyAccepted() {
      String longest = (prefix + "x".repeat(IdempotencyStore.MAX_KEY_LENGTH))
          .substring(0, IdempotencyStore.MAX_KEY_LENGTH);

      Claim c = store.claim(longest, lease());

      assertThat(c.isClaimed()).isTrue();
      assertThat(store.complete(c)).isTrue();
      assertThat(store.claim(longest, lease()).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("keys with any characters are kept apart, including braces: completing \"a\""
        + " leaves \"{a}\" and its relatives absent")
    void bracesKeptApart() {
      String[] family = {"a", "{a}", "{a}}", "a}", "}a", "{}a", "{{a}", "{a}:x", "x:{a}"};
      // Each key is the family member with the test's random prefix put inside it, so that "{a}"
      // becomes "{<prefix>a}": the hash tag of the old Redis encoding of "<prefix>a".
      Claim first = store.claim(key("a"), lease());
      assertThat(store.complete(first)).isTrue();
      for (int i = 1; i < family.length; i++) {
        String k = family[i].startsWith("{") ? "{" + prefix + family[i].substring(1)
            : prefix + family[i];
        assertThat(store.status(k)).as("status of %s", k).isEmpty();
        Claim c = store.claim(k, lease());
        assertThat(c.status()).as("claim of %s", k).isEqualTo(Claim.Status.CLAIMED);
        assertThat(store.complete(c)).isTrue();
      }
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("keys with any characters are kept apart exactly")
    void oddCharactersKeptApart() {
      String odd = key("order 42:sms/ä{tag}*?\"'");
      Claim c = store.claim(odd, lease());
      assertThat(store.complete(c)).isTrue();

      assertThat(store.status(odd)).contains(Claim.Status.DONE);
      assertThat(store.status(key("order 42:sms/ä{tag}*?\""))).isEmpty();
      assertThat(store.claim(key("order 42:sms/a{tag}*?\"'"), lease()).isClaimed()).isTrue();
    }
  }

  @Nested
  @DisplayName("complete")
  class CompleteCases {

    @Test
    @DisplayName("a completed key answers DONE to every later claim")
    void completedIsDone() {
      Claim c = store.claim(key("a"), lease());

      assertThat(store.complete(c)).isTrue();

      Claim again = store.claim(key("a"), lease());
      assertThat(again.status()).isEqualTo(Claim.Status.DONE);
      assertThat(again.token()).isNull();
      assertThat(again.leaseExpiresAt()).isNull();
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("DONE outlives the lease it was claimed with")
    void doneOutlivesLease() {
      Claim c = store.claim(key("a"), lease());
      assertThat(store.complete(c)).isTrue();

      advance(lease().plusMillis(1));

      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("DONE is forgotten after the retention period: the key can be claimed again")
    void doneExpiresAfterRetention() {
      Claim c = store.claim(key("a"), lease());
      assertThat(store.complete(c)).isTrue();

      advance(retention().plusMillis(1));

      assertThat(store.status(key("a"))).isEmpty();
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("completing twice with the same claim reports false the second time")
    void completeTwice() {
      Claim c = store.claim(key("a"), lease());

      assertThat(store.complete(c)).isTrue();
      assertThat(store.complete(c)).isFalse();
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a claim with a token the store never issued does not complete the key")
    void foreignTokenRejected() {
      Claim real = store.claim(key("a"), lease());
      Claim forged = Claim.claimed(key("a"), "forged-" + UUID.randomUUID(),
          real.leaseExpiresAt());

      assertThat(store.complete(forged)).isFalse();
      assertThat(store.release(forged)).isFalse();
      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(real)).isTrue();
    }

    @Test
    @DisplayName("completing a key that is not claimed reports false and leaves it absent")
    void completeAbsent() {
      Claim forged = Claim.claimed(key("ghost"), "t-" + UUID.randomUUID(),
          clock().instant().plus(lease()));

      assertThat(store.complete(forged)).isFalse();
      assertThat(store.status(key("ghost"))).isEmpty();
    }

    @Test
    @DisplayName("markDone makes an absent key, a lapsed claim nobody took over and a DONE key DONE")
    void markDone() {
      assertThat(store.markDone(key("a"))).isTrue();
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.DONE);
      assertThat(store.markDone(key("a"))).isTrue();
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);

      Claim lapsed = store.claim(key("b"), lease());
      advance(lease().plusMillis(1));
      assertThat(store.markDone(key("b"))).isTrue();
      assertThat(store.claim(key("b"), lease()).status()).isEqualTo(Claim.Status.DONE);
      assertThat(store.complete(lapsed)).isFalse();
    }

    @Test
    @DisplayName("completing or releasing a claim that is not CLAIMED throws"
        + " IllegalArgumentException")
    void nonClaimedRejected() {
      Claim holder = store.claim(key("a"), lease());
      Claim inProgress = store.claim(key("a"), lease());

      assertThatThrownBy(() -> store.complete(inProgress))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.release(inProgress))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.complete(Claim.done(key("a"))))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.complete(null))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.release(null))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(store.complete(holder)).isTrue();
    }
  }

  @Nested
  @DisplayName("release")
  class ReleaseCases {

    @Test
    @DisplayName("a released claim can be claimed again at once")
    void releasedClaimable() {
      Claim c = store.claim(key("a"), lease());

      assertThat(store.release(c)).isTrue();

      assertThat(store.status(key("a"))).isEmpty();
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("releasing twice reports false the second time and frees nothing else")
    void releaseTwice() {
      Claim c = store.claim(key("a"), lease());
      assertThat(store.release(c)).isTrue();
      Claim next = store.claim(key("a"), lease());

      assertThat(store.release(c)).isFalse();
      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(next)).isTrue();
    }

    @Test
    @DisplayName("a completed key cannot be released back to absent")
    void releaseAfterComplete() {
      Claim c = store.claim(key("a"), lease());
      assertThat(store.complete(c)).isTrue();

      assertThat(store.release(c)).isFalse();
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
    }
  }

  @Nested
  @DisplayName("leases")
  class LeaseCases {

    @Test
    @DisplayName("an expired lease can be claimed again, by anyone")
    void expiredLeaseReclaimable() {
      store.claim(key("a"), lease());

      advance(lease().plusMillis(1));

      assertThat(store.status(key("a"))).isEmpty();
      Claim taken = store.claim(key("a"), lease());
      assertThat(taken.status()).isEqualTo(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("after a takeover the stale claim neither completes nor releases the key")
    void staleTokenAfterTakeover() {
      Claim stale = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));
      Claim current = store.claim(key("a"), lease());
      assertThat(current.isClaimed()).isTrue();

      assertThat(store.complete(stale)).isFalse();
      assertThat(store.release(stale)).isFalse();

      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(store.complete(current)).isTrue();
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
    }
  }

  @Nested
  @DisplayName("fenced by token, not by time")
  class TokenFenceCases {

    @Test
    @DisplayName("a claim whose lease lapsed completes when nobody took it over, and the key is"
        + " DONE")
    void lapsedClaimCompletes() {
      Claim slow = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));

      assertThat(store.complete(slow)).isTrue();

      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a claim whose lease lapsed can be released when nobody took it over")
    void lapsedClaimReleases() {
      Claim slow = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));

      assertThat(store.release(slow)).isTrue();

      assertThat(store.claim(key("a"), lease()).isClaimed()).isTrue();
    }

    @Test
    @DisplayName("renew moves the lease's end to lease-time from now: nobody takes the key over"
        + " after the first lease would have ended")
    void renewExtends() {
      Claim c = store.claim(key("a"), lease());
      advance(lease().dividedBy(2));

      assertThat(store.renew(c, lease().multipliedBy(3))).isTrue();
      advance(lease());

      Claim other = store.claim(key("a"), lease());
      assertThat(other.status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(other.leaseExpiresAt()).isAfter(c.leaseExpiresAt());
      assertThat(store.status(key("a"))).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(c)).isTrue();
    }

    @Test
    @DisplayName("a lapsed claim that nobody took over is revived by renew")
    void renewRevivesLapsed() {
      Claim c = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));

      assertThat(store.renew(c, lease().multipliedBy(3))).isTrue();

      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(store.complete(c)).isTrue();
    }

    @Test
    @DisplayName("a claim taken over is not renewed, and the new holder keeps its lease")
    void renewAfterTakeover() {
      Claim stale = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));
      Claim current = store.claim(key("a"), lease());
      assertThat(current.isClaimed()).isTrue();

      assertThat(store.renew(stale, lease())).isFalse();

      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(store.complete(stale)).isFalse();
      assertThat(store.complete(current)).isTrue();
    }

    @Test
    @DisplayName("a completed or released claim is not renewed back to CLAIMED")
    void renewAfterCompleteOrRelease() {
      Claim done = store.claim(key("a"), lease());
      assertThat(store.complete(done)).isTrue();
      Claim freed = store.claim(key("b"), lease());
      assertThat(store.release(freed)).isTrue();

      assertThat(store.renew(done, lease())).isFalse();
      assertThat(store.renew(freed, lease())).isFalse();

      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
      assertThat(store.status(key("b"))).isEmpty();
    }

    @Test
    @DisplayName("renew refuses a claim that is not CLAIMED and a non-positive lease with"
        + " IllegalArgumentException")
    void renewBadInput() {
      Claim c = store.claim(key("a"), lease());
      Claim inProgress = store.claim(key("a"), lease());

      assertThatThrownBy(() -> store.renew(inProgress, lease()))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.renew(null, lease()))
          .isInstanceOf(IllegalArgumentException.class);
      for (Duration bad : new Duration[] {null, Duration.ZERO, Duration.ofMillis(-1)}) {
        assertThatThrownBy(() -> store.renew(c, bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      }
      assertThat(store.complete(c)).isTrue();
    }
  }

  @Nested
  @DisplayName("one clock for shared decisions")
  class OneClockCases {

    private IdempotencyStore host(Duration skew) {
      Optional<IdempotencyStore> other = storeOnHost(InstantSource.offset(clock(), skew));
      assumeTrue(other.isPresent(), "the backend has no second host (one process, one clock)");
      return other.get();
    }

    @Test
    @DisplayName("a host whose clock runs 31 s (past the lease) fast cannot take a fresh claim")
    void fastHostCannotTakeFreshClaim() {
      IdempotencyStore fast = host(lease().plusSeconds(1));
      Claim holder = store.claim(key("a"), lease());

      assertThat(fast.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(fast.status(key("a"))).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(holder)).isTrue();
    }

    @Test
    @DisplayName("a host whose clock runs 8 days fast neither purges nor reclaims a DONE key")
    void fastHostKeepsDoneKeys() {
      IdempotencyStore fast = host(Duration.ofDays(8));
      Claim c = store.claim(key("a"), lease());
      assertThat(store.complete(c)).isTrue();

      // Claims of other keys give a store that purges as it goes its chance to do so.
      for (int i = 0; i < 3; i++) {
        Claim other = fast.claim(key("other-" + i), lease());
        assertThat(other.isClaimed()).isTrue();
        assertThat(fast.complete(other)).isTrue();
      }

      assertThat(fast.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.DONE);
      assertThat(store.status(key("a"))).contains(Claim.Status.DONE);
      assertThat(store.claim(key("a"), lease()).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a host whose clock runs an hour slow takes over a lease that lapsed on the"
        + " store's clock, and its new lease is not measured from its own clock")
    void slowHostSeesLapsedLease() {
      IdempotencyStore slow = host(Duration.ofHours(-1));
      Claim stale = store.claim(key("a"), lease());
      advance(lease().plusMillis(1));

      Claim taken = slow.claim(key("a"), lease());

      assertThat(taken.isClaimed()).isTrue();
      assertThat(store.claim(key("a"), lease()).status())
          .as("the slow host's lease runs from the store's now, not an hour ago")
          .isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(store.complete(stale)).isFalse();
      assertThat(slow.complete(taken)).isTrue();
    }
  }

  @Nested
  @DisplayName("concurrency")
  class ConcurrencyCases {

    @Test
    @DisplayName("of 16 threads claiming one key at once, exactly one gets CLAIMED")
    void exactlyOneWins() {
      for (int round = 0; round < 20; round++) {
        String k = key("race-" + round);
        List<Claim> claims = Race.run(16, Duration.ofSeconds(30), i -> store.claim(k, lease()));

        assertThat(claims).filteredOn(Claim::isClaimed).hasSize(1);
        assertThat(claims).filteredOn(c -> !c.isClaimed())
            .allSatisfy(c -> assertThat(c.status()).isEqualTo(Claim.Status.IN_PROGRESS));
      }
    }

    @Test
    @DisplayName("of 16 threads racing claim-then-complete on one key, exactly one completes")
    void exactlyOneCompletes() {
      String k = key("race-complete");
      List<Boolean> completed = Race.run(16, Duration.ofSeconds(30), i -> {
        Claim c = store.claim(k, lease());
        return c.isClaimed() && store.complete(c);
      });

      assertThat(completed).filteredOn(b -> b).hasSize(1);
      assertThat(store.status(k)).contains(Claim.Status.DONE);
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a null or blank key throws IllegalArgumentException naming the key")
    void blankKey() {
      for (String bad : new String[] {null, "", "   "}) {
        assertThatThrownBy(() -> store.claim(bad, lease()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
        assertThatThrownBy(() -> store.status(bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      }
    }

    @Test
    @DisplayName("a key longer than MAX_KEY_LENGTH throws IllegalArgumentException naming the limit")
    void oversizeKey() {
      String tooLong = "k".repeat(IdempotencyStore.MAX_KEY_LENGTH + 1);

      assertThatThrownBy(() -> store.claim(tooLong, lease()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("key")
          .hasMessageContaining(String.valueOf(IdempotencyStore.MAX_KEY_LENGTH));
      assertThatThrownBy(() -> store.status(tooLong))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    }

    @Test
    @DisplayName("a null, zero or negative lease throws IllegalArgumentException naming the lease")
    void nonPositiveLease() {
      for (Duration bad : new Duration[] {null, Duration.ZERO, Duration.ofMillis(-1)}) {
        assertThatThrownBy(() -> store.claim(key("a"), bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      }
      assertThat(store.status(key("a"))).isEmpty();
    }
  }

  @Nested
  @DisplayName("lost replies: every write committed, its reply dropped")
  class LostReplies {

    private LostReply<IdempotencyStore> seam() {
      return LostReply.over(IdempotencyStore.class, store);
    }

    private void dropAndCall(LostReply<IdempotencyStore> seam, String method, Runnable call) {
      seam.dropNextReplyOf(method);
      assertThatThrownBy(call::run).isInstanceOf(LostReply.LostReplyException.class);
      assertThat(seam.dropped()).isEqualTo(1);
    }

    @Test
    @DisplayName("claim: not done for the caller (it holds no token); the key reads IN_PROGRESS"
        + " until the lease lapses, then a repeat claims it: safe to retry after the lease")
    void claim() {
      LostReply<IdempotencyStore> seam = seam();
      String k = key("lost-claim");

      dropAndCall(seam, "claim", () -> seam.store().claim(k, lease()));

      assertThat(seam.store().claim(k, lease()).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      advance(lease().plusSeconds(1));
      assertThat(seam.store().claim(k, lease()).isClaimed()).isTrue();
    }

    @Test
    @DisplayName("complete: done; the repeat answers false and status reads DONE, which is how"
        + " the caller tells (IdempotentHandler does)")
    void complete() {
      LostReply<IdempotencyStore> seam = seam();
      String k = key("lost-complete");
      Claim c = store.claim(k, lease());

      dropAndCall(seam, "complete", () -> seam.store().complete(c));

      assertThat(seam.store().complete(c)).isFalse();
      assertThat(store.status(k)).contains(Claim.Status.DONE);
      assertThat(store.claim(k, lease()).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("release: done; the repeat answers false and the key is free for the retry")
    void release() {
      LostReply<IdempotencyStore> seam = seam();
      String k = key("lost-release");
      Claim c = store.claim(k, lease());

      dropAndCall(seam, "release", () -> seam.store().release(c));

      assertThat(seam.store().release(c)).isFalse();
      assertThat(store.status(k)).isEmpty();
      assertThat(store.claim(k, lease()).isClaimed()).isTrue();
    }

    @Test
    @DisplayName("renew: unknown and safe to retry; the repeat renews again and the claim still"
        + " completes")
    void renew() {
      LostReply<IdempotencyStore> seam = seam();
      String k = key("lost-renew");
      Claim c = store.claim(k, lease());

      dropAndCall(seam, "renew", () -> seam.store().renew(c, lease()));

      assertThat(seam.store().renew(c, lease())).isTrue();
      assertThat(store.complete(c)).isTrue();
    }

    @Test
    @DisplayName("markDone: unknown and safe to retry; the key reads DONE")
    void markDone() {
      LostReply<IdempotencyStore> seam = seam();
      String k = key("lost-mark");

      dropAndCall(seam, "markDone", () -> seam.store().markDone(k));

      assertThat(seam.store().markDone(k)).isTrue();
      assertThat(store.status(k)).contains(Claim.Status.DONE);
    }
  }
}

package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.retry.Backoff;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.IdempotencyStoreContract;
import io.relaykit.tck.Race;
import io.relaykit.tck.SwitchableIdempotencyStore;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The tiered store passes the idempotency kit on two in-memory tiers, and keeps its promises when
 * the fast tier goes away and comes back. The real Redis fast tier is tested in storage-redis.
 */
@DisplayName("TieredIdempotencyStore")
class TieredIdempotencyStoreTest extends IdempotencyStoreContract {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Backoff RETRY = Backoff.exponential(Duration.ofSeconds(1))
      .withMax(Duration.ofSeconds(8));

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    return new TieredIdempotencyStore(new InMemoryIdempotencyStore(clock, retention),
        new InMemoryIdempotencyStore(clock, retention), clock, RETRY);
  }

  @Nested
  @DisplayName("tiers")
  class Tiers {
    final FakeClock clock = new FakeClock();
    final SwitchableIdempotencyStore fast = new SwitchableIdempotencyStore(
        new InMemoryIdempotencyStore(clock, Duration.ofHours(1)), "the fast tier");
    final SwitchableIdempotencyStore durable =
        new SwitchableIdempotencyStore(new InMemoryIdempotencyStore(clock, Duration.ofHours(2)),
            "the durable tier");
    final TieredIdempotencyStore tiered = new TieredIdempotencyStore(fast, durable, clock, RETRY);

    @Test
    @DisplayName("new work is claimed in both tiers, and DONE is written to both")
    void bothTiers() {
      Claim c = tiered.claim("order-1", LEASE);
      assertThat(c.isClaimed()).isTrue();
      assertThat(fast.delegate().status("order-1")).contains(Claim.Status.CLAIMED);
      assertThat(durable.delegate().status("order-1")).contains(Claim.Status.CLAIMED);

      assertThat(tiered.complete(c)).isTrue();
      assertThat(fast.delegate().status("order-1")).contains(Claim.Status.DONE);
      assertThat(durable.delegate().status("order-1")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a repeat of done work is answered by the fast tier alone, of in-flight work with "
        + "one durable read")
    void repeatsStopAtFastTier() {
      Claim c = tiered.claim("order-2", LEASE);
      int durableCalls = durable.calls();
      assertThat(tiered.claim("order-2", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(durable.calls()).isEqualTo(durableCalls + 1);
      tiered.complete(c);
      durableCalls = durable.calls();
      assertThat(tiered.claim("order-2", LEASE).status()).isEqualTo(Claim.Status.DONE);
      assertThat(durable.calls()).isEqualTo(durableCalls);
    }

    @Test
    @DisplayName("fast CLAIMED but durable DONE answers DONE and fills in the fast tier")
    void durableDoneWins() {
      Claim d = durable.delegate().claim("order-3", LEASE);
      durable.delegate().complete(d);

      assertThat(tiered.claim("order-3", LEASE).status()).isEqualTo(Claim.Status.DONE);
      assertThat(fast.delegate().status("order-3")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a repeat of in-flight work is IN_PROGRESS even when the durable tier cannot "
        + "confirm it")
    void inProgressWithDurableDown() {
      Claim c = tiered.claim("order-9", LEASE);
      durable.down(true);
      assertThat(tiered.claim("order-9", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      durable.down(false);
      assertThat(tiered.complete(c)).isTrue();
    }

    @Test
    @DisplayName("a fast claim that outlived its work (orphaned) does not hide a durable DONE")
    void orphanedFastClaim() {
      fast.delegate().claim("order-8", LEASE);
      Claim d = durable.delegate().claim("order-8", LEASE);
      durable.delegate().complete(d);

      assertThat(tiered.claim("order-8", LEASE).status()).isEqualTo(Claim.Status.DONE);
      assertThat(fast.delegate().status("order-8")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a fast claim left by a timed-out claim command does not keep the fast tier from "
        + "DONE after the work completes on the durable tier")
    void timedOutFastClaimDoesNotBlockDone() {
      fast.down(true);
      Claim c = tiered.claim("order-10", LEASE); // on the durable tier alone
      fast.down(false);
      // The timed-out claim command still ran on the server: a fast claim nobody will complete.
      Claim orphan = fast.delegate().claim("order-10", LEASE);
      clock.advance(RETRY.delay(1));

      assertThat(tiered.complete(c)).isTrue();

      assertThat(fast.delegate().status("order-10")).contains(Claim.Status.DONE);
      assertThat(fast.delegate().complete(orphan)).isFalse();
    }

    @Test
    @DisplayName("a fast claim taken over after the lease lapsed does not keep the fast tier from "
        + "DONE when the first holder completes")
    void fastTakeoverDoesNotBlockDone() {
      Claim first = tiered.claim("order-11", Duration.ofSeconds(2));
      clock.advance(Duration.ofSeconds(3));
      // A redelivery took the lapsed fast claim over and still holds it (it has not yet asked
      // the durable tier, where the first holder's claim was not taken over).
      Claim redelivery = fast.delegate().claim("order-11", LEASE);
      assertThat(redelivery.isClaimed()).isTrue();

      assertThat(tiered.complete(first)).isTrue();

      assertThat(durable.delegate().status("order-11")).contains(Claim.Status.DONE);
      assertThat(fast.delegate().status("order-11")).contains(Claim.Status.DONE);
      assertThat(fast.delegate().release(redelivery)).isFalse();
      assertThat(tiered.claim("order-11", LEASE).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a fast DONE missed while the fast tier was down is written by the first call "
        + "that finds it back")
    void doneWrittenWhenFastTierIsBack() {
      Claim c = tiered.claim("order-12", LEASE);
      fast.down(true);
      assertThat(tiered.claim("order-13", LEASE).status()).isEqualTo(Claim.Status.CLAIMED);
      assertThat(tiered.complete(c)).isTrue(); // fast tier skipped: it is backing off
      fast.down(false);
      assertThat(fast.delegate().status("order-12")).contains(Claim.Status.CLAIMED);

      clock.advance(RETRY.delay(1));
      tiered.status("order-13");
      assertThat(fast.delegate().status("order-12")).contains(Claim.Status.CLAIMED);
      tiered.claim("order-14", LEASE); // the probe: the fast tier answers again

      assertThat(fast.delegate().status("order-12")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a backlog of missed fast DONEs is written a bounded batch per call")
    void pendingDrainedInBatches() {
      int n = TieredIdempotencyStore.MAX_DRAIN_PER_CALL + 10;
      List<Claim> claims = new java.util.ArrayList<>();
      for (int i = 0; i < n; i++) {
        claims.add(tiered.claim("batch-" + i, LEASE));
      }
      fast.down(true);
      claims.forEach(c -> assertThat(tiered.complete(c)).isTrue());
      fast.down(false);
      clock.advance(RETRY.delay(1));

      tiered.claim("batch-probe", LEASE);
      assertThat(fastDone(n)).isEqualTo(TieredIdempotencyStore.MAX_DRAIN_PER_CALL);
      tiered.claim("batch-next", LEASE);
      assertThat(fastDone(n)).isEqualTo(n);
    }

    private long fastDone(int n) {
      return java.util.stream.IntStream.range(0, n)
          .filter(i -> fast.delegate().status("batch-" + i).orElse(null) == Claim.Status.DONE)
          .count();
    }

    @Test
    @DisplayName("fast CLAIMED but durable IN_PROGRESS answers IN_PROGRESS and frees the fast claim")
    void durableInProgress() {
      durable.delegate().claim("order-4", LEASE);

      assertThat(tiered.claim("order-4", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(fast.delegate().status("order-4")).isEmpty();
    }

    @Test
    @DisplayName("complete writes the durable tier first: if it fails, the fast tier is not DONE")
    void durableFirst() {
      Claim c = tiered.claim("order-5", LEASE);
      durable.down(true);
      assertThatThrownBy(() -> tiered.complete(c))
          .isInstanceOf(IdempotencyUnavailableException.class);
      assertThat(fast.delegate().status("order-5")).contains(Claim.Status.CLAIMED);
      durable.down(false);
      assertThat(tiered.complete(c)).isTrue();
      assertThat(tiered.status("order-5")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a durable outage is not masked, and the fast claim it would strand is freed")
    void durableOutagePropagates() {
      durable.down(true);
      assertThatThrownBy(() -> tiered.claim("order-6", LEASE))
          .isInstanceOf(IdempotencyUnavailableException.class);
      assertThat(fast.delegate().status("order-6")).isEmpty();
    }

    @Test
    @DisplayName("release frees both tiers")
    void release() {
      Claim c = tiered.claim("order-7", LEASE);
      assertThat(tiered.release(c)).isTrue();
      assertThat(fast.delegate().status("order-7")).isEmpty();
      assertThat(durable.delegate().status("order-7")).isEmpty();
      assertThat(tiered.claim("order-7", LEASE).isClaimed()).isTrue();
    }
  }

  @Nested
  @DisplayName("fast-tier outage")
  class Outage {
    final FakeClock clock = new FakeClock();
    final SwitchableIdempotencyStore fast = new SwitchableIdempotencyStore(
        new InMemoryIdempotencyStore(clock, Duration.ofHours(1)), "the fast tier");
    final InMemoryIdempotencyStore durable = new InMemoryIdempotencyStore(clock, Duration.ofHours(2));
    final TieredIdempotencyStore tiered = new TieredIdempotencyStore(fast, durable, clock, RETRY);

    @Test
    @DisplayName("while the fast tier is down, the durable tier alone claims, excludes and completes")
    void durableAlone() {
      fast.down(true);
      Claim c = tiered.claim("order-10", LEASE);
      assertThat(c.isClaimed()).isTrue();
      assertThat(tiered.fastTierInUse()).isFalse();
      assertThat(tiered.claim("order-10", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(tiered.complete(c)).isTrue();
      assertThat(durable.status("order-10")).contains(Claim.Status.DONE);
      assertThat(tiered.claim("order-10", LEASE).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("the fast tier is left alone during the back-off, probed after it, and used again "
        + "when it answers")
    void backOffAndReturn() {
      fast.down(true);
      tiered.claim("a", LEASE);
      int calls = fast.calls();
      tiered.claim("b", LEASE);
      tiered.claim("c", LEASE);
      assertThat(fast.calls()).as("no fast call during the back-off").isEqualTo(calls);

      clock.advance(Duration.ofSeconds(1));
      tiered.claim("d", LEASE);
      assertThat(fast.calls()).as("one probe after 1 s").isEqualTo(calls + 1);
      assertThat(tiered.fastTierInUse()).isFalse();

      clock.advance(Duration.ofSeconds(1));
      tiered.claim("e", LEASE);
      assertThat(fast.calls()).as("the back-off doubled to 2 s").isEqualTo(calls + 1);

      fast.down(false);
      clock.advance(Duration.ofSeconds(1));
      Claim f = tiered.claim("f", LEASE);
      assertThat(tiered.fastTierInUse()).isTrue();
      assertThat(fast.delegate().status("f")).contains(Claim.Status.CLAIMED);
      assertThat(tiered.complete(f)).isTrue();
      assertThat(fast.delegate().status("f")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("work claimed during the outage is not done twice when the fast tier returns, and "
        + "its DONE is filled in")
    void claimSpansReturn() {
      fast.down(true);
      Claim during = tiered.claim("order-11", LEASE);
      fast.down(false);
      clock.advance(Duration.ofSeconds(1));

      assertThat(tiered.claim("order-11", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(fast.delegate().status("order-11")).as("the losing fast claim was freed").isEmpty();
      assertThat(tiered.complete(during)).isTrue();
      assertThat(fast.delegate().status("order-11")).contains(Claim.Status.DONE);
      assertThat(tiered.claim("order-11", LEASE).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a claim made with the fast tier completes even if the fast tier dies meanwhile")
    void fastDiesMidWork() {
      Claim c = tiered.claim("order-12", LEASE);
      fast.down(true);
      assertThat(tiered.complete(c)).isTrue();
      assertThat(durable.status("order-12")).contains(Claim.Status.DONE);
      assertThat(tiered.claim("order-12", LEASE).status()).isEqualTo(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a store with the fast tier down and one with it up, on the same tiers, never both "
        + "claim a key")
    void mixedModes() {
      TieredIdempotencyStore healthy = new TieredIdempotencyStore(
          fast.delegate(), durable, clock, RETRY);
      for (int round = 0; round < 20; round++) {
        String key = "race-" + round;
        fast.down(true);
        List<Claim> claims = Race.run(8, Duration.ofSeconds(10),
            i -> (i % 2 == 0 ? tiered : healthy).claim(key, LEASE));
        assertThat(claims).filteredOn(Claim::isClaimed).hasSize(1);
      }
    }
  }

  @Test
  @DisplayName("the constructor rejects missing arguments and one store used as both tiers")
  void badConstruction() {
    InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(new FakeClock(), LEASE);
    FakeClock clock = new FakeClock();
    assertThatThrownBy(() -> new TieredIdempotencyStore(null, s, clock, RETRY))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fast");
    assertThatThrownBy(() -> new TieredIdempotencyStore(
        new InMemoryIdempotencyStore(clock, LEASE), null, clock, RETRY))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("durable");
    assertThatThrownBy(() -> new TieredIdempotencyStore(s, s, clock, RETRY))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("different");
    assertThatThrownBy(() -> new TieredIdempotencyStore(
        new InMemoryIdempotencyStore(clock, LEASE), s, clock, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryFastAfter");
  }
}

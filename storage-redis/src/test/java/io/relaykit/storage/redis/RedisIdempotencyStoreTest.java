package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.cluster.SlotHash;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("RedisIdempotencyStore on the real Redis")
class RedisIdempotencyStoreTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

  private static RedisTestSupport support;
  private static RedisStorage storage;
  private static RedisIdempotencyStore store;

  @BeforeAll
  static void open() {
    support = new RedisTestSupport();
    storage = RedisStorage.open(support.config().retention(Duration.ofHours(1)).build());
    store = storage.idempotencyStore();
  }

  @AfterAll
  static void close() {
    if (storage != null) {
      storage.close();
    }
    if (support != null) {
      support.close();
    }
  }

  /** The Redis server's clock, which decides leases. */
  private static Instant serverTime() {
    List<String> t = support.raw().time();
    return Instant.ofEpochSecond(Long.parseLong(t.get(0)), Long.parseLong(t.get(1)) * 1_000);
  }

  private static String key(String name) {
    return name + "-" + System.nanoTime();
  }

  @Nested
  @DisplayName("what Redis holds")
  class Holds {
    @Test
    @DisplayName("a claim is the owner's token and its lease end on the server's clock, kept for"
        + " the lease plus the retention so a late owner can still complete it")
    void claimHoldsToken() {
      String key = key("order-1");
      Instant before = serverTime();
      Claim c = store.claim(key, LEASE);
      Instant after = serverTime();
      assertThat(c.status()).isEqualTo(Claim.Status.CLAIMED);
      String redisKey = store.redisKey(key);
      assertThat(c.token()).matches("[0-9a-f]{32}");
      assertThat(support.raw().get(redisKey)).matches("[0-9a-f]{32}\\.\\d+")
          .isEqualTo(c.token() + "." + c.leaseExpiresAt().toEpochMilli());
      // The lease end is kept in milliseconds; TIME gives microseconds.
      assertThat(c.leaseExpiresAt()).isBetween(
          before.truncatedTo(java.time.temporal.ChronoUnit.MILLIS).plus(LEASE), after.plus(LEASE));
      long keep = LEASE.plus(Duration.ofHours(1)).toMillis();
      assertThat(support.raw().pttl(redisKey)).isBetween(keep - 5_000L, keep);
    }

    @Test
    @DisplayName("renew rewrites the lease end from the server's clock and keeps the token")
    void renewHolds() {
      String key = key("order-1r");
      Claim c = store.claim(key, Duration.ofSeconds(5));
      Instant before = serverTime();
      assertThat(store.renew(c, LEASE)).isTrue();
      String v = support.raw().get(store.redisKey(key));
      assertThat(v).startsWith(c.token() + ".");
      long end = Long.parseLong(v.substring(33));
      assertThat(end).isGreaterThanOrEqualTo(before.plus(LEASE).toEpochMilli());
      assertThat(store.complete(c)).isTrue();
    }

    @Test
    @DisplayName("a completed key holds DONE with the retention as expiry")
    void doneHoldsRetention() {
      String key = key("order-2");
      Claim c = store.claim(key, LEASE);
      assertThat(store.complete(c)).isTrue();
      String redisKey = store.redisKey(key);
      assertThat(support.raw().get(redisKey)).isEqualTo("DONE");
      assertThat(support.raw().pttl(redisKey)).isBetween(3_500_000L, 3_600_000L);
      assertThat(store.claim(key, LEASE).status()).isEqualTo(Claim.Status.DONE);
      assertThat(store.status(key)).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("markDone overwrites a live claim of anyone with DONE for the retention, and "
        + "leaves a value another program wrote alone")
    void markDoneOverwritesHolder() {
      String key = key("order-2b");
      Claim holder = store.claim(key, LEASE);
      assertThat(store.markDone(key)).isTrue();
      String redisKey = store.redisKey(key);
      assertThat(support.raw().get(redisKey)).isEqualTo("DONE");
      assertThat(support.raw().pttl(redisKey)).isBetween(3_500_000L, 3_600_000L);
      assertThat(store.complete(holder)).isFalse();

      String foreign = key("order-2c");
      support.raw().set(store.redisKey(foreign), "not-ours");
      assertThatThrownBy(() -> store.markDone(foreign))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("another program");
      assertThat(support.raw().get(store.redisKey(foreign))).isEqualTo("not-ours");
    }

    @Test
    @DisplayName("a released key is deleted")
    void releaseDeletes() {
      String key = key("order-3");
      Claim c = store.claim(key, LEASE);
      assertThat(store.release(c)).isTrue();
      assertThat(support.raw().exists(store.redisKey(key))).isZero();
      assertThat(store.status(key)).isEmpty();
      assertThat(store.claim(key, LEASE).status()).isEqualTo(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("keys are namespaced by the prefix, kept whole, and carry a hash tag per entity")
    void namespacing() {
      assertThat(store.redisKey("order-42")).isEqualTo(support.prefix + "idem.v2:{order-42}:order-42");
      assertThat(store.redisKey("{order-42}:sms"))
          .isEqualTo(support.prefix + "idem.v2:{order-42}:{order-42}:sms");
      assertThat(SlotHash.getSlot(store.redisKey("{order-42}:sms")))
          .isEqualTo(SlotHash.getSlot(store.redisKey("{order-42}:email")))
          .isEqualTo(SlotHash.getSlot(store.redisKey("order-42")))
          .isEqualTo(SlotHash.getSlot("{order-42}"));
    }

    @Test
    @DisplayName("keys that collided in the old encoding (\"a\", \"{a}\") get distinct records")
    void noCollisions() {
      String[] keys = {"a", "{a}", "{a}}", "}a", "a}", "{}a", "{{a}", "{a}:", "a:{a}", "{a}b{c}"};
      java.util.Set<String> redisKeys = new java.util.HashSet<>();
      for (String k : keys) {
        String rk = store.redisKey(k);
        assertThat(rk).endsWith("}:" + k);
        assertThat(redisKeys.add(rk)).as("distinct record for %s", k).isTrue();
      }
      assertThat(SlotHash.getSlot(store.redisKey("{a}")))
          .isEqualTo(SlotHash.getSlot(store.redisKey("a")))
          .isEqualTo(SlotHash.getSlot(store.redisKey("{a}b{c}")));
      // The old encoding mapped "a" and "{a}" to one key:
      assertThat(store.legacyRedisKey("a")).isEqualTo(store.legacyRedisKey("{a}"));
    }

    @Test
    @DisplayName("with readLegacyIdempotencyKeys a DONE or live claim in the old key format is"
        + " honoured; without it, it is not read")
    void legacyKeys() {
      String key = key("legacy");
      String done = key + "-done";
      support.raw().psetex(store.legacyRedisKey(done), 60_000, "DONE");
      support.raw().psetex(store.legacyRedisKey(key), 60_000,
          "0123456789abcdef0123456789abcdef.1");
      try (RedisStorage legacy = RedisStorage.open(support.config().retention(Duration.ofHours(1))
          .readLegacyIdempotencyKeys(true).build())) {
        RedisIdempotencyStore reading = legacy.idempotencyStore();
        assertThat(reading.claim(done, LEASE).status()).isEqualTo(Claim.Status.DONE);
        assertThat(reading.status(done)).contains(Claim.Status.DONE);
        Claim held = reading.claim(key, LEASE);
        assertThat(held.status()).isEqualTo(Claim.Status.IN_PROGRESS);
        assertThat(held.leaseExpiresAt()).isAfter(serverTime().plusSeconds(50));
        assertThat(reading.status(key)).contains(Claim.Status.CLAIMED);
      }
      assertThat(store.claim(done, LEASE).status()).isEqualTo(Claim.Status.CLAIMED);
      assertThat(store.claim(key, LEASE).status()).isEqualTo(Claim.Status.CLAIMED);
    }
  }

  @Nested
  @DisplayName("ownership")
  class Ownership {
    @Test
    @DisplayName("a live claim makes others wait with the lease's expiry")
    void inProgress() {
      String key = key("order-4");
      Claim first = store.claim(key, LEASE);
      Claim second = store.claim(key, LEASE);
      assertThat(second.status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(second.token()).isNull();
      assertThat(second.leaseExpiresAt()).isAfter(first.leaseExpiresAt().minusSeconds(5));
    }

    @Test
    @DisplayName("a claim that is not the owner's neither completes nor releases")
    void foreignToken() {
      String key = key("order-5");
      Claim real = store.claim(key, LEASE);
      Claim forged = Claim.claimed(key, "0123456789abcdef0123456789abcdef", real.leaseExpiresAt());
      assertThat(store.complete(forged)).isFalse();
      assertThat(store.release(forged)).isFalse();
      assertThat(support.raw().get(store.redisKey(key))).startsWith(real.token() + ".");
    }

    @Test
    @DisplayName("an expired lease is claimed again on the server's clock, and the old owner "
        + "can no longer complete")
    void expiredLease() {
      String key = key("order-6");
      Claim old = store.claim(key, Duration.ofMillis(150));
      Claim fresh = Await.value(Duration.ofSeconds(5), "the lease to expire",
          () -> store.claim(key, LEASE), Claim::isClaimed);
      assertThat(fresh.token()).isNotEqualTo(old.token());
      assertThat(store.complete(old)).isFalse();
      assertThat(store.release(old)).isFalse();
      assertThat(store.complete(fresh)).isTrue();
    }

    @Test
    @DisplayName("of many concurrent claimers exactly one wins")
    void concurrentClaims() throws Exception {
      String key = key("order-7");
      int threads = 8;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Claim>> results = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          results.add(pool.submit(() -> {
            start.await();
            return store.claim(key, LEASE);
          }));
        }
        start.countDown();
        int claimed = 0;
        for (Future<Claim> f : results) {
          if (f.get().isClaimed()) {
            claimed++;
          }
        }
        assertThat(claimed).isEqualTo(1);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {
    @Test
    @DisplayName("blank, null and oversize keys are rejected naming the field")
    void badKeys() {
      assertThatThrownBy(() -> store.claim(" ", LEASE))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      assertThatThrownBy(() -> store.claim(null, LEASE))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      assertThatThrownBy(() -> store.status(""))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      String big = "k".repeat(IdempotencyStore.MAX_KEY_LENGTH + 1);
      assertThatThrownBy(() -> store.claim(big, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("key must be at most 512").hasMessageContaining("513");
      assertThat(store.claim("k".repeat(IdempotencyStore.MAX_KEY_LENGTH), LEASE).isClaimed())
          .isTrue();
    }

    @Test
    @DisplayName("zero, negative and sub-millisecond leases are rejected")
    void badLease() {
      for (Duration d : new Duration[] {Duration.ZERO, Duration.ofSeconds(-1),
          Duration.ofNanos(10), null}) {
        assertThatThrownBy(() -> store.claim(key("l"), d))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      }
    }

    @Test
    @DisplayName("only a CLAIMED claim can be completed or released")
    void notClaimed() {
      assertThatThrownBy(() -> store.complete(Claim.done("x")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DONE");
      assertThatThrownBy(() -> store.release(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("claim");
    }

    @Test
    @DisplayName("a key of another type already in Redis is a clear error naming key and type")
    void wrongType() {
      String key = key("hashed");
      String redisKey = store.redisKey(key);
      support.raw().hset(redisKey, "field", "value");
      assertThatThrownBy(() -> store.claim(key, LEASE))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(redisKey).hasMessageContaining("hash");
      assertThatThrownBy(() -> store.status(key))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("hash");
      assertThat(support.raw().hget(redisKey, "field")).isEqualTo("value");
    }

    @Test
    @DisplayName("a foreign string without expiry is not taken for a claim that never ends")
    void foreignString() {
      String key = key("foreign");
      support.raw().set(store.redisKey(key), "someone-else");
      assertThatThrownBy(() -> store.claim(key, LEASE))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("without expiry");
      assertThat(support.raw().get(store.redisKey(key))).isEqualTo("someone-else");
    }
  }
}

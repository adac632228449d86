package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A master of a real 3-master Redis Cluster (started here, see {@link RedisClusterProcess}) is
 * killed under the idempotency store: each call either answers or fails with {@link
 * IdempotencyUnavailableException} within about the command timeout, never hangs, and a tiered
 * store in front of a durable tier still answers every key exactly once.
 */
@DisplayName("Redis Cluster: a killed master")
class RedisClusterOutageTest {

  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);
  private static RedisClusterProcess cluster;
  private static RedisStorage storage;

  @BeforeAll
  static void start() throws Exception {
    cluster = RedisClusterProcess.start();
    storage = RedisStorage.open(RedisStorageConfig.builder().cluster(true).uri(cluster.seeds())
        .keyPrefix("rkoutage:").connectTimeout(Duration.ofSeconds(20))
        .commandTimeout(COMMAND_TIMEOUT).reconnectMaxDelay(Duration.ofMillis(200)).build());
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (storage != null) {
        storage.close();
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  @Test
  @DisplayName("after a master dies, calls answer or fail as unavailable within the timeout, and"
      + " the tiered store answers every key once")
  void killedMaster() throws Exception {
    RedisIdempotencyStore fast = storage.idempotencyStore();
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      keys.add("order-" + i + ":sms");
    }
    // The first connect reads the topology within the short command timeout: on a busy machine
    // that can take a few tries.
    Await.until(Duration.ofSeconds(60), "the cluster client to connect", () -> {
      try {
        fast.status("warm-up");
        return true;
      } catch (IdempotencyUnavailableException e) {
        return false;
      }
    });
    // All masters up: every key is claimable and released again.
    for (String k : keys) {
      Claim c = fast.claim(k, Duration.ofSeconds(30));
      assertThat(c.isClaimed()).isTrue();
      assertThat(fast.release(c)).isTrue();
    }

    cluster.kill(cluster.ports().get(0));

    int failed = 0;
    for (String k : keys) {
      long start = System.nanoTime();
      try {
        Claim c = fast.claim(k, Duration.ofSeconds(30));
        assertThat(c.isClaimed()).isTrue();
        assertThat(fast.release(c)).isTrue();
      } catch (IdempotencyUnavailableException e) {
        failed++;
        assertThat(e).hasMessageContaining(k);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("a call on %s never hangs past the command timeout (with slack for a busy"
              + " machine)", k)
          .isLessThan(COMMAND_TIMEOUT.multipliedBy(2).plusSeconds(5));
    }
    assertThat(failed).as("the keys on the dead master (about a third) fail as unavailable")
        .isPositive();

    IdempotencyStore durable = new InMemoryIdempotencyStore(InstantSource.system(),
        Duration.ofHours(1));
    TieredIdempotencyStore tiered = new TieredIdempotencyStore(fast, durable,
        InstantSource.system(), Backoff.exponential(Duration.ofSeconds(1)));
    for (String k : keys) {
      Claim c = tiered.claim(k, Duration.ofSeconds(30));
      assertThat(c.isClaimed()).as("claim of %s", k).isTrue();
      assertThat(tiered.claim(k, Duration.ofSeconds(30)).status())
          .isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(tiered.complete(c)).isTrue();
      assertThat(tiered.claim(k, Duration.ofSeconds(30)).status()).isEqualTo(Claim.Status.DONE);
    }
    assertThat(durable.status(keys.get(0))).contains(Claim.Status.DONE);
    assertThatThrownBy(() -> {
      for (String k : keys) {
        fast.status(k);
      }
    }).as("some fast-tier key is still unreachable").isInstanceOf(
        IdempotencyUnavailableException.class);
  }
}

package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.queue.QueueJournal;
import io.relaykit.tck.Await;
import io.relaykit.tck.DeadLetterStoreContract;
import io.relaykit.tck.IdempotencyStoreContract;
import io.relaykit.tck.QueueJournalContract;
import io.relaykit.tck.VersionGuardContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The Redis stores' contract kits on a real Redis Cluster of three masters that this class starts
 * from the machine's {@code redis-server} on its own ports ({@link RedisClusterProcess}) and kills
 * at the end, through {@code RedisStorageConfig.cluster(true)} (Lettuce's cluster client). Every
 * script relaykit runs touches keys of one hash slot; the kits and the slot checks here show that
 * this holds on a cluster, where a cross-slot script fails with CROSSSLOT.
 */
@DisplayName("Redis stores on a real 3-master Redis Cluster")
class RedisClusterTest {

  private static RedisClusterProcess cluster;
  private static RedisStorage storage;
  private static final List<RedisStorage> OPENED = new CopyOnWriteArrayList<>();
  private static final String PREFIX = "rkcluster:" + UUID.randomUUID().toString().substring(0, 8)
      + ":";

  @BeforeAll
  static void startCluster() throws Exception {
    cluster = RedisClusterProcess.start();
    storage = open(InstantSource.system(), Duration.ofMillis(4000));
    // Load Lettuce's classes and the topology before the kit's short real-time leases count.
    Await.until(Duration.ofSeconds(30), "the cluster client to answer", () -> {
      try {
        storage.idempotencyStore().status("warm-up");
        return true;
      } catch (RuntimeException e) {
        return false;
      }
    });
  }

  @AfterAll
  static void stopCluster() throws Exception {
    try {
      OPENED.forEach(RedisStorage::close);
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  private static RedisStorage open(InstantSource clock, Duration retention) {
    RedisStorage s = RedisStorage.open(RedisStorageConfig.builder().cluster(true)
        .uri(cluster.seeds()).keyPrefix(PREFIX).retention(retention)
        .connectTimeout(Duration.ofSeconds(20)).commandTimeout(Duration.ofSeconds(10)).build(),
        clock);
    OPENED.add(s);
    return s;
  }

  @Test
  @DisplayName("keys spread over all three masters, while one entity's keys share a slot")
  void keysSpreadOverMasters() throws Exception {
    RedisIdempotencyStore store = storage.idempotencyStore();
    for (int i = 0; i < 60; i++) {
      Claim c = store.claim("spread-" + i, Duration.ofSeconds(30));
      assertThat(store.complete(c)).isTrue();
    }
    for (int port : cluster.ports()) {
      assertThat(cluster.keysOn(port)).as("keys on the master at %s", port).isPositive();
    }
    assertThat(SlotHash.getSlot(store.redisKey("{order-42}:sms")))
        .isEqualTo(SlotHash.getSlot(store.redisKey("{order-42}:email")))
        .isEqualTo(SlotHash.getSlot(storage.versionGuard().redisKey("{order-42}")));
    Claim sms = store.claim("{order-42}:sms", Duration.ofSeconds(30));
    Claim email = store.claim("{order-42}:email", Duration.ofSeconds(30));
    assertThat(store.complete(sms)).isTrue();
    assertThat(store.complete(email)).isTrue();
    assertThat(store.status("{order-42}:sms")).contains(Claim.Status.DONE);
  }

  @Test
  @DisplayName("the legacy-key read works on a cluster: both keys of a claim share a slot")
  void legacyKeysOnCluster() {
    RedisStorage legacy = RedisStorage.open(storage.config().toBuilder()
        .readLegacyIdempotencyKeys(true).build());
    OPENED.add(legacy);
    IdempotencyStore store = legacy.idempotencyStore();
    for (int i = 0; i < 20; i++) {
      String key = i % 2 == 0 ? "legacy-" + i : "{legacy-" + i + "}:sms";
      Claim c = store.claim(key, Duration.ofSeconds(30));
      assertThat(c.isClaimed()).isTrue();
      assertThat(store.complete(c)).isTrue();
      assertThat(store.status(key)).contains(Claim.Status.DONE);
    }
  }

  @Nested
  @DisplayName("idempotency kit")
  class Idempotency extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
      return retention.equals(Duration.ofMillis(4000)) ? storage.idempotencyStore()
          : open(clock, retention).idempotencyStore();
    }

    @Override
    protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
      return Optional.of(open(hostClock, retention()).idempotencyStore());
    }

    @Override
    protected InstantSource clock() {
      return InstantSource.system();
    }

    @Override
    protected void advance(Duration duration) {
      Await.elapsed(duration);
    }

    @Override
    protected Duration lease() {
      return Duration.ofMillis(1000);
    }

    @Override
    protected Duration retention() {
      return Duration.ofMillis(4000);
    }

    @Override
    protected Duration clockTolerance() {
      return Duration.ofMillis(5);
    }
  }

  @Nested
  @DisplayName("dead-letter kit")
  class DeadLetters extends DeadLetterStoreContract {
    @Override
    protected DeadLetterStore createStore() {
      return storage.deadLetterStore("dlq-" + UUID.randomUUID());
    }
  }

  @Nested
  @DisplayName("version guard kit")
  class Versions extends VersionGuardContract {
    @Override
    protected VersionGuard createGuard() {
      return storage.versionGuard();
    }
  }

  @Nested
  @DisplayName("journal kit")
  class Journal extends QueueJournalContract {
    private final List<RedisStorage> storages = new ArrayList<>();
    private String name;

    @AfterEach
    void closeStorages() {
      storages.forEach(RedisStorage::close);
      storages.clear();
    }

    @Override
    protected QueueJournal openJournal() {
      name = "gateway-" + UUID.randomUUID();
      return reopenJournal();
    }

    @Override
    protected QueueJournal reopenJournal() {
      RedisStorage s = RedisStorage.open(storage.config());
      storages.add(s);
      return s.journal(name);
    }
  }
}

package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.ordering.InMemoryVersionGuard;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.QueueJournal;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedisStorageModule: relaykit.storage=redis wires the Redis stores")
class RedisStorageModuleTest {
  private static RedisTestSupport support;

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
  }

  @AfterAll
  static void cleanUp() {
    if (support != null) {
      support.close();
    }
  }

  private RelayKitConfig.Builder config() {
    return RelayKitConfig.builder().storage("redis")
        .set("relaykit.redis.uri", support.uri)
        .set("relaykit.redis.key-prefix", support.prefix)
        .set("relaykit.redis.connect-timeout", "20s")
        .set("relaykit.redis.command-timeout", "10s");
  }

  @Test
  @DisplayName("the four SPIs are the Redis stores on one storage, found through ServiceLoader, "
      + "and the outbox stays in memory")
  void wiring() {
    Injector injector = Guice.createInjector(new RelayKitModule(config()
        .set("relaykit.redis.journal", "gw-1").set("relaykit.redis.retention", "2h").build()));
    try (RedisStorage storage = injector.getInstance(RedisStorage.class)) {
      assertThat(storage.config().keyPrefix()).isEqualTo(support.prefix);
      assertThat(storage.config().retention()).isEqualTo(Duration.ofHours(2));
      IdempotencyStore idempotency = injector.getInstance(IdempotencyStore.class);
      assertThat(idempotency).isInstanceOf(RedisIdempotencyStore.class)
          .isSameAs(injector.getInstance(IdempotencyStore.class));
      assertThat(injector.getInstance(VersionGuard.class)).isInstanceOf(RedisVersionGuard.class);
      assertThat(injector.getInstance(DeadLetterStore.class))
          .isInstanceOf(RedisDeadLetterStore.class);
      QueueJournal journal = injector.getInstance(QueueJournal.class);
      assertThat(journal).isInstanceOf(RedisJournal.class);
      assertThat(((RedisJournal) journal).name()).isEqualTo("gw-1");
      assertThat(injector.getInstance(OutboxStore.class)).isInstanceOf(InMemoryOutboxStore.class);

      Claim c = idempotency.claim("wired-order", Duration.ofSeconds(30));
      assertThat(idempotency.complete(c)).isTrue();
      assertThat(support.raw().get(support.prefix + "idem.v2:{wired-order}:wired-order")).isEqualTo("DONE");
      assertThat(support.raw().pttl(support.prefix + "idem.v2:{wired-order}:wired-order"))
          .isGreaterThan(Duration.ofHours(1).toMillis());
    }
  }

  @Test
  @DisplayName("relaykit.idempotency.fast-tier=redis puts the Redis store in front of the storage"
      + " backend's, and binds nothing else from Redis")
  void fastTier() {
    Injector injector = Guice.createInjector(new RelayKitModule(config().storage("memory")
        .idempotencyFastTier("redis").build()));
    try (RedisStorage storage = injector.getInstance(RedisStorage.class)) {
      IdempotencyStore idempotency = injector.getInstance(IdempotencyStore.class);
      assertThat(idempotency).isInstanceOf(TieredIdempotencyStore.class);
      assertThat(injector.getInstance(VersionGuard.class))
          .as("the other SPIs stay with the storage backend")
          .isInstanceOf(InMemoryVersionGuard.class);

      Claim c = idempotency.claim("tiered-order", Duration.ofSeconds(30));
      assertThat(support.raw().get(support.prefix + "idem.v2:{tiered-order}:tiered-order"))
          .as("the claim went through Redis").isNotNull();
      assertThat(idempotency.complete(c)).isTrue();

      assertThat(support.raw().get(support.prefix + "idem.v2:{tiered-order}:tiered-order")).isEqualTo("DONE");
      assertThat(idempotency.status("tiered-order")).as("the durable tier holds it too")
          .contains(Claim.Status.DONE);
      assertThat(((TieredIdempotencyStore) idempotency).fastTierInUse()).isTrue();
    }
  }

  @Test
  @DisplayName("an invalid setting of the Redis fast tier fails when the module is built")
  void badFastTierSettings() {
    assertThatThrownBy(() -> new RelayKitModule(config().storage("memory")
        .idempotencyFastTier("redis").set("relaykit.redis.key-prefix", "a{b}").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.redis.key-prefix").hasMessageContaining("a{b}");
  }

  @Test
  @DisplayName("an invalid setting fails when the module is built, naming the key and value")
  void badSettings() {
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set("relaykit.redis.key-prefix", "a{b}").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.redis.key-prefix").hasMessageContaining("a{b}");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set("relaykit.redis.uri", "http://nope").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.redis.uri").hasMessageContaining("http://nope");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set("relaykit.redis.command-timeout", "0ms").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.redis.command-timeout");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set("relaykit.redis.journal", "a}").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.redis.journal");
  }

  @Test
  @DisplayName("the module rejects a missing config and bad names")
  void badModule() {
    RedisStorageConfig ok = RedisStorageConfig.builder().build();
    assertThatThrownBy(() -> new RedisStorageModule(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("config");
    assertThatThrownBy(() -> new RedisStorageModule(ok, " ", "default"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
  }
}

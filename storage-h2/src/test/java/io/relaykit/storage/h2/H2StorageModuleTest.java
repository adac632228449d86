package io.relaykit.storage.h2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.message.Message;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.QueueJournal;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** relaykit.storage=h2 through RelayKitModule and the ServiceLoader registration. */
class H2StorageModuleTest {

  private static RelayKitConfig.Builder config() {
    return RelayKitConfig.builder().storage("h2")
        .set(H2StorageBackend.URL, "jdbc:h2:mem:guice" + UUID.randomUUID().toString()
            .replace("-", ""))
        .set(H2StorageBackend.TABLE_PREFIX, "g_");
  }

  @Test
  @DisplayName("relaykit.storage=h2 binds every storage SPI to one JDBC storage")
  void bindsSpis() throws Exception {
    Injector injector = Guice.createInjector(new RelayKitModule(
        config().set(H2StorageBackend.POOL_SIZE, "2").build()));
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      assertThat(storage.tablePrefix()).isEqualTo("g_");
      assertThat(injector.getInstance(OutboxStore.class))
          .isSameAs(injector.getInstance(JdbcOutboxStore.class));
      assertThat(injector.getInstance(IdempotencyStore.class))
          .isInstanceOf(JdbcIdempotencyStore.class);
      assertThat(injector.getInstance(DeadLetterStore.class))
          .isInstanceOf(JdbcDeadLetterStore.class);
      assertThat(injector.getInstance(VersionGuard.class)).isInstanceOf(JdbcVersionGuard.class);
      assertThat(injector.getInstance(QueueJournal.class)).isInstanceOf(JdbcQueueJournal.class);

      try (Connection c = storage.dataSource().getConnection()) {
        injector.getInstance(JdbcOutboxStore.class).append(c, "orders",
            Message.builder().type("t").payload("x").build());
      }
      assertThat(injector.getInstance(OutboxStore.class).stats(Instant.now()).unsent())
          .isEqualTo(1);
      assertThat(injector.getInstance(IdempotencyStore.class)
          .claim("k", Duration.ofSeconds(5)).status()).isEqualTo(Claim.Status.CLAIMED);
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }
  }

  @Test
  @DisplayName("a missing or invalid relaykit.h2 setting fails naming the key and value")
  void invalidSettings() {
    assertThatThrownBy(() -> new RelayKitModule(RelayKitConfig.builder().storage("h2").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("relaykit.h2.url");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(H2StorageBackend.URL, "jdbc:oracle:thin:@x").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbc:oracle:thin:@x");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(H2StorageBackend.TABLE_PREFIX, "no-dashes").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no-dashes");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(H2StorageBackend.POOL_SIZE, "zero").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pool-size");
  }
}

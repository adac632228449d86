package io.relaykit.storage.h2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.AbstractModule;
import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.config.Settings;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.message.Message;
import io.relaykit.storage.jdbc.JdbcConfigKeys;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageBackend;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.sql.Connection;
import java.time.Instant;
import java.time.InstantSource;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The former package's types forward to the renamed ones for one release. */
@SuppressWarnings("removal")
class DeprecatedForwardersTest {

  @Test
  @DisplayName("H2StorageConfig and H2StorageModule build the same storage as the new types")
  void configAndModuleForward() throws Exception {
    JdbcStorageConfig config = H2StorageConfig.builder()
        .jdbcUrl("jdbc:h2:mem:fwd" + UUID.randomUUID().toString().replace("-", ""))
        .tablePrefix("fwd_").build();
    Injector injector = Guice.createInjector(new AbstractModule() {
      @Override
      protected void configure() {
        bind(InstantSource.class).toInstance(InstantSource.system());
        install(new H2StorageModule(config, "fwd"));
      }
    });
    try (JdbcStorage storage = injector.getInstance(JdbcStorage.class)) {
      assertThat(storage.tablePrefix()).isEqualTo("fwd_");
      try (Connection c = storage.dataSource().getConnection()) {
        injector.getInstance(JdbcOutboxStore.class).append(c, "orders",
            Message.builder().type("t").payload("x").build());
      }
      assertThat(injector.getInstance(JdbcOutboxStore.class).stats(Instant.now()).unsent())
          .isEqualTo(1);
    }
    assertThat(H2StorageConfig.DEFAULT_POOL_SIZE).isEqualTo(JdbcStorageConfig.DEFAULT_POOL_SIZE);
    assertThatThrownBy(() -> new H2StorageModule(null, "j"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("config");
  }

  @Test
  @DisplayName("H2ConfigKeys names the new keys, H2StorageConfig.from reads them")
  void keysAndFrom() {
    assertThat(H2ConfigKeys.URL).isEqualTo(JdbcConfigKeys.URL);
    JdbcStorageConfig config = H2StorageConfig.from(Settings.builder()
        .set(H2ConfigKeys.URL, "jdbc:h2:mem:x").set(H2ConfigKeys.POOL_SIZE, "3").build());
    assertThat(config.poolSize()).isEqualTo(3);
  }

  @Test
  @DisplayName("H2StorageBackend is the JDBC backend under its old name")
  void backendForwards() {
    H2StorageBackend old = new H2StorageBackend();
    JdbcStorageBackend current = new JdbcStorageBackend();
    assertThat(old.kind()).isEqualTo(current.kind());
    assertThat(old.name()).isEqualTo(current.name());
    assertThat(old.module(RelayKitConfig.builder().storage(current.name())
        .set(JdbcConfigKeys.URL, "jdbc:h2:mem:y").build())).isNotNull();
  }
}

package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import com.google.inject.AbstractModule;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.Backends;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.QueueJournal;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** relaykit.storage=jdbc through RelayKitModule and the ServiceLoader registration. */
class JdbcStorageModuleTest {

  private static RelayKitConfig.Builder config() {
    return RelayKitConfig.builder().storage("jdbc")
        .set(JdbcStorageBackend.URL, "jdbc:h2:mem:guice" + UUID.randomUUID().toString()
            .replace("-", ""))
        .set(JdbcStorageBackend.TABLE_PREFIX, "g_");
  }

  @Test
  @DisplayName("relaykit.storage=jdbc binds every storage SPI to one JDBC storage")
  void bindsSpis() throws Exception {
    Injector injector = Guice.createInjector(new RelayKitModule(
        config().set(JdbcStorageBackend.POOL_SIZE, "2").build()));
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
  @DisplayName("the outbox reports ENQUEUED to the injector's LifecycleListener")
  void outboxReportsToBoundListener() throws Exception {
    LifecycleLog log = new LifecycleLog(100);
    Injector injector = Guice.createInjector(new RelayKitModule(config().build()),
        new AbstractModule() {
          @Override
          protected void configure() {
            RelayKitModule.override(binder(), LifecycleListener.class).toInstance(log);
          }
        });
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      Message m = Message.builder().type("t").payload("x").build();
      try (Connection c = storage.dataSource().getConnection()) {
        injector.getInstance(JdbcOutboxStore.class).append(c, "orders", m);
      }
      assertThat(log.history(m.id())).extracting(LifecycleEvent::stage, LifecycleEvent::traceId,
          LifecycleEvent::where).containsExactly(
              tuple(Stage.ENQUEUED, m.traceId(), "orders"));
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }
  }

  @Test
  @DisplayName("without a listener binding, JdbcStorageModule reports to the config's listener")
  void configListenerWithoutBinding() throws Exception {
    LifecycleLog log = new LifecycleLog(100);
    JdbcStorageConfig h2 = JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:mem:guice" + UUID.randomUUID().toString().replace("-", ""))
        .listener(log).build();
    Injector injector = Guice.createInjector(new JdbcStorageModule(h2, "j"), new AbstractModule() {
      @Override
      protected void configure() {
        bind(InstantSource.class).toInstance(InstantSource.system());
      }
    });
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      Message m = Message.builder().type("t").payload("x").build();
      try (Connection c = storage.dataSource().getConnection()) {
        injector.getInstance(JdbcOutboxStore.class).append(c, "orders", m);
      }
      assertThat(log.history(m.id())).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED);
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }
  }

  @Test
  @DisplayName("the injected relay holds rows for relaykit.jdbc.lease and keeps sent rows for"
      + " relaykit.jdbc.retention; without them, relaykit.relay.lease and the idempotency retention")
  void relayUsesStorageLeaseAndRetention() {
    Injector injector = Guice.createInjector(new RelayKitModule(config()
        .set(JdbcStorageBackend.LEASE, "PT12S").set(JdbcStorageBackend.RETENTION, "P2D").build()));
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      io.relaykit.outbox.OutboxRelay relay =
          injector.getInstance(io.relaykit.outbox.OutboxRelay.class);
      assertThat(relay.lease()).isEqualTo(Duration.ofSeconds(12));
      assertThat(relay.retention()).isEqualTo(Duration.ofDays(2));
      assertThat(storage.retention()).isEqualTo(Duration.ofDays(2));
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }

    Injector defaults = Guice.createInjector(new RelayKitModule(config()
        .relayLease(Duration.ofSeconds(40)).idempotencyRetention(Duration.ofHours(5)).build()));
    JdbcStorage second = defaults.getInstance(JdbcStorage.class);
    try {
      io.relaykit.outbox.OutboxRelay relay =
          defaults.getInstance(io.relaykit.outbox.OutboxRelay.class);
      assertThat(relay.lease()).isEqualTo(Duration.ofSeconds(40));
      assertThat(relay.retention()).isEqualTo(Duration.ofHours(5));
    } finally {
      defaults.getInstance(JdbcQueueJournal.class).close();
      second.close();
    }
  }

  @Test
  @DisplayName("relaykit.jdbc.outbox-max-unsent with outbox-over-bound=refuse bounds the injected"
      + " outbox: the append at the bound is refused")
  void outboxBoundFromSettings() throws Exception {
    Injector injector = Guice.createInjector(new RelayKitModule(config()
        .set(JdbcStorageBackend.OUTBOX_MAX_UNSENT, "1")
        .set(JdbcStorageBackend.OUTBOX_OVER_BOUND, "refuse").build()));
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try (Connection c = storage.dataSource().getConnection()) {
      JdbcOutboxStore outbox = injector.getInstance(JdbcOutboxStore.class);
      assertThat(outbox.bound()).isEqualTo(io.relaykit.outbox.OutboxBound.refuseAbove(1));
      outbox.append(c, "orders", Message.builder().type("t").payload("x").build());
      assertThatThrownBy(() -> outbox.append(c, "orders",
          Message.builder().type("t").payload("y").build()))
          .isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }
  }

  @Test
  @DisplayName("relaykit.jdbc.outbox-order-scope picks what per-key order spans for the injected"
      + " outbox; key unless set")
  void outboxOrderScopeFromSettings() throws Exception {
    for (String[] c : new String[][] {{null, "KEY"}, {"key", "KEY"},
        {"key-per-destination", "KEY_PER_DESTINATION"}}) {
      RelayKitConfig.Builder b = config();
      if (c[0] != null) {
        b.set(JdbcStorageBackend.OUTBOX_ORDER_SCOPE, c[0]);
      }
      Injector injector = Guice.createInjector(new RelayKitModule(b.build()));
      JdbcStorage storage = injector.getInstance(JdbcStorage.class);
      try {
        assertThat(injector.getInstance(JdbcOutboxStore.class).orderScope())
            .as("scope for %s", c[0]).isEqualTo(OutboxOrderScope.valueOf(c[1]));
      } finally {
        injector.getInstance(JdbcQueueJournal.class).close();
        storage.close();
      }
    }
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.OUTBOX_ORDER_SCOPE, "global").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.jdbc.outbox-order-scope").hasMessageContaining("'global'");
  }

  @Test
  @DisplayName("relaykit.storage=postgres with a PostgreSQL URL binds the JDBC storage on"
      + " PostgreSQL")
  void postgresByName() throws Exception {
    String prefix = "pgname_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8)
        + "_";
    Injector injector = Guice.createInjector(new RelayKitModule(RelayKitConfig.builder()
        .storage("postgres").set(JdbcStorageBackend.URL, TestDatabase.POSTGRES_DEFAULT_URL)
        .set(JdbcStorageBackend.TABLE_PREFIX, prefix).set(JdbcStorageBackend.POOL_SIZE, "1")
        .build()));
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      assertThat(storage.dialect()).isEqualTo(Dialect.POSTGRESQL);
      assertThat(injector.getInstance(OutboxStore.class)).isInstanceOf(JdbcOutboxStore.class);
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      try (Connection c = storage.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        List<String> tables = new java.util.ArrayList<>();
        try (java.sql.ResultSet rs = c.getMetaData().getTables(null, null, prefix + "%",
            new String[] {"TABLE"})) {
          while (rs.next()) {
            tables.add(rs.getString("TABLE_NAME"));
          }
        }
        for (String t : tables) {
          st.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
        }
      }
      storage.close();
    }
  }

  @Test
  @DisplayName("relaykit.storage=postgres with another database's URL is refused naming both;"
      + " h2 with a PostgreSQL URL is accepted with one deprecation line")
  void storageNameAgainstUrl() {
    assertThatThrownBy(() -> new RelayKitModule(config().storage("postgres").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.storage=postgres").hasMessageContaining("jdbc:h2:")
        .hasMessageNotContaining("guice");
    assertThat(JdbcStorageConfig.checkStorageName("h2", "jdbc:postgresql://db/app"))
        .isEqualTo("relaykit.storage=h2 with a PostgreSQL URL is deprecated and accepted for one"
            + " more release; set relaykit.storage=postgres (or jdbc)");
    assertThat(JdbcStorageConfig.checkStorageName("h2", "jdbc:h2:mem:x")).isNull();
    assertThat(JdbcStorageConfig.checkStorageName("jdbc", "jdbc:postgresql://db/app")).isNull();
    assertThat(JdbcStorageConfig.checkStorageName("postgres", "jdbc:postgresql://db/app")).isNull();
    assertThat(Backends.discover().names(BackendModuleProvider.Kind.STORAGE))
        .contains("jdbc", "h2", "postgres");
  }

  @Test
  @DisplayName("a missing or invalid relaykit.jdbc setting fails naming the key and value")
  void invalidSettings() {
    assertThatThrownBy(() -> new RelayKitModule(RelayKitConfig.builder().storage("jdbc").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("relaykit.jdbc.url");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.URL, "jdbc:oracle:thin:@x").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbc:oracle:thin:@x");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.OUTBOX_MAX_UNSENT, "10")
        .set(JdbcStorageBackend.OUTBOX_OVER_BOUND, "drop").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.jdbc.outbox-over-bound").hasMessageContaining("'drop'");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.OUTBOX_MAX_UNSENT, "0").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.jdbc.outbox-max-unsent");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.TABLE_PREFIX, "no-dashes").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no-dashes");
    assertThatThrownBy(() -> new RelayKitModule(config()
        .set(JdbcStorageBackend.POOL_SIZE, "zero").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pool-size");
  }

  @Test
  @DisplayName("with relaykit.idempotency.fast-tier the JDBC store is the durable tier: every claim"
      + " and DONE is in the database, in front of it the fast tier answers repeats")
  void durableTierBehindAFastTier() {
    Injector injector = Guice.createInjector(new RelayKitModule(
        config().idempotencyFastTier("local").build(),
        Backends.of(List.of(new JdbcStorageBackend(), new LocalFastTier()))));
    JdbcStorage storage = injector.getInstance(JdbcStorage.class);
    try {
      IdempotencyStore store = injector.getInstance(IdempotencyStore.class);
      JdbcIdempotencyStore durable = injector.getInstance(JdbcIdempotencyStore.class);
      InMemoryIdempotencyStore fast = injector.getInstance(InMemoryIdempotencyStore.class);
      assertThat(store).isInstanceOf(TieredIdempotencyStore.class);

      Claim claim = store.claim("order-7:paid", Duration.ofSeconds(30));
      assertThat(durable.status("order-7:paid")).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(claim)).isTrue();

      assertThat(durable.status("order-7:paid")).contains(Claim.Status.DONE);
      assertThat(fast.status("order-7:paid")).contains(Claim.Status.DONE);
      assertThat(store.claim("order-7:paid", Duration.ofSeconds(30)).status())
          .isEqualTo(Claim.Status.DONE);
    } finally {
      injector.getInstance(JdbcQueueJournal.class).close();
      storage.close();
    }
  }

  /** A fast tier in this JVM's memory, standing in for Redis (adapters never meet in a test). */
  private static final class LocalFastTier implements BackendModuleProvider {
    @Override
    public Kind kind() {
      return Kind.STORAGE;
    }

    @Override
    public String name() {
      return "local";
    }

    @Override
    public Module module(RelayKitConfig config) {
      throw new UnsupportedOperationException("only a fast tier");
    }

    @Override
    public Optional<Module> idempotencyFastTier(RelayKitConfig config,
        Key<IdempotencyStore> key) {
      return Optional.of(new AbstractModule() {
        @Override
        protected void configure() {
          bind(key).to(InMemoryIdempotencyStore.class);
        }

        @Provides
        @Singleton
        InMemoryIdempotencyStore store(InstantSource clock) {
          return new InMemoryIdempotencyStore(clock, config.idempotencyRetention());
        }
      });
    }
  }
}

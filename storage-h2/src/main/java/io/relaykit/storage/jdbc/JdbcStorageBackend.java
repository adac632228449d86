package io.relaykit.storage.jdbc;

import com.google.inject.AbstractModule;
import com.google.inject.Module;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.OutboxRelaySettings;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.QueueJournal;
import java.util.List;

/**
 * The storage backend {@code relaykit.storage=jdbc} selects, as do its aliases {@code h2} and
 * {@code postgres} (found through {@link
 * java.util.ServiceLoader}): installs an {@link JdbcStorageModule} and makes its stores relaykit's
 * {@link OutboxStore}, {@link IdempotencyStore}, {@link DeadLetterStore}, {@link VersionGuard} and
 * {@link QueueJournal}; with {@code relaykit.idempotency.fast-tier} set (say {@code redis}), the
 * {@link JdbcIdempotencyStore} is instead the durable tier, the final guard, behind that backend's
 * store. The outbox reports ENQUEUED to the injector's {@code LifecycleListener}. Reads the
 * {@code relaykit.jdbc.*} keys through {@link JdbcStorageConfig#from(io.relaykit.config.Settings)}
 * (declared by {@link JdbcConfigKeys}; their former names {@code relaykit.h2.*} are read for one
 * more release). The URL picks the database; {@code postgres} with a URL that is not {@code
 * jdbc:postgresql:} is refused, and {@code h2} with a PostgreSQL URL works for one more release
 * and logs one deprecation line (see {@link JdbcStorageConfig#checkStorageName}):
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>key</th><th>default</th></tr>
 *   <tr><td>{@code relaykit.jdbc.url}</td><td>required; a PostgreSQL URL selects PostgreSQL</td></tr>
 *   <tr><td>{@code relaykit.jdbc.username}, {@code relaykit.jdbc.password}</td><td>none</td></tr>
 *   <tr><td>{@code relaykit.jdbc.pool-size}</td><td>4</td></tr>
 *   <tr><td>{@code relaykit.jdbc.table-prefix}</td><td>{@code relaykit_}</td></tr>
 *   <tr><td>{@code relaykit.jdbc.lease}</td><td>{@code relaykit.relay.lease}; the injected
 *       relay's lease</td></tr>
 *   <tr><td>{@code relaykit.jdbc.retention}</td><td>{@code relaykit.idempotency.retention}; how
 *       long the injected relay keeps sent rows and the idempotency store DONE keys</td></tr>
 *   <tr><td>{@code relaykit.jdbc.journal-name}</td><td>{@code relaykit}</td></tr>
 *   <tr><td>{@code relaykit.jdbc.outbox-max-unsent}</td><td>none (unbounded)</td></tr>
 *   <tr><td>{@code relaykit.jdbc.outbox-over-bound}</td><td>{@code refuse}: an append at the
 *       bound throws {@code OutboxFullException}; {@code accept}: it is written, counted, and the
 *       relay's backlog verdict is OVER_BOUND</td></tr>
 *   <tr><td>{@code relaykit.jdbc.outbox-order-scope}</td><td>{@code key}: per-key order spans
 *       every destination; {@code key-per-destination}: a key is ordered per destination, so a
 *       failing row for one destination does not hold the key's rows for another</td></tr>
 *   <tr><td>{@code relaykit.jdbc.migrate}</td><td>{@code true}; {@code false} only verifies the
 *       schema version</td></tr>
 * </table>
 */
public final class JdbcStorageBackend implements BackendModuleProvider {
  /** Created by {@link java.util.ServiceLoader}; holds no state. */
  public JdbcStorageBackend() {}

  /** See {@link JdbcConfigKeys#URL}. */
  public static final String URL = JdbcConfigKeys.URL;
  /** See {@link JdbcConfigKeys#USERNAME}. */
  public static final String USERNAME = JdbcConfigKeys.USERNAME;
  /** See {@link JdbcConfigKeys#PASSWORD}. */
  public static final String PASSWORD = JdbcConfigKeys.PASSWORD;
  /** See {@link JdbcConfigKeys#POOL_SIZE}. */
  public static final String POOL_SIZE = JdbcConfigKeys.POOL_SIZE;
  /** See {@link JdbcConfigKeys#TABLE_PREFIX}. */
  public static final String TABLE_PREFIX = JdbcConfigKeys.TABLE_PREFIX;
  /** See {@link JdbcConfigKeys#LEASE}. */
  public static final String LEASE = JdbcConfigKeys.LEASE;
  /** See {@link JdbcConfigKeys#RETENTION}. */
  public static final String RETENTION = JdbcConfigKeys.RETENTION;
  /** See {@link JdbcConfigKeys#JOURNAL_NAME}. */
  public static final String JOURNAL_NAME = JdbcConfigKeys.JOURNAL_NAME;
  /** See {@link JdbcConfigKeys#MIGRATE}. */
  public static final String MIGRATE = JdbcConfigKeys.MIGRATE;
  /** See {@link JdbcConfigKeys#OUTBOX_MAX_UNSENT}. */
  public static final String OUTBOX_MAX_UNSENT = JdbcConfigKeys.OUTBOX_MAX_UNSENT;
  /** See {@link JdbcConfigKeys#OUTBOX_OVER_BOUND}. */
  public static final String OUTBOX_OVER_BOUND = JdbcConfigKeys.OUTBOX_OVER_BOUND;
  /** See {@link JdbcConfigKeys#OUTBOX_ORDER_SCOPE}. */
  public static final String OUTBOX_ORDER_SCOPE = JdbcConfigKeys.OUTBOX_ORDER_SCOPE;

  @Override
  public Kind kind() {
    return Kind.STORAGE;
  }

  /** The backend's name: {@code relaykit.storage=jdbc}; see {@link JdbcStorageConfig#NAME}. */
  public static final String NAME = JdbcStorageConfig.NAME;

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public List<String> aliases() {
    return List.of(JdbcStorageConfig.H2, JdbcStorageConfig.POSTGRES);
  }

  /**
   * @throws IllegalArgumentException naming the key and value when a setting is missing or
   *     invalid, or {@code relaykit.storage=postgres} with a URL that is not PostgreSQL's
   */
  @Override
  public Module module(RelayKitConfig config) {
    JdbcStorageConfig h2 = JdbcStorageConfig.from(config.settings());
    JdbcStorageConfig.checkStorageName(config.storage(), h2.jdbcUrl());
    String journalName = config.settings().getString(JOURNAL_NAME, "relaykit");
    return new AbstractModule() {
      @Override
      protected void configure() {
        install(new JdbcStorageModule(h2, journalName));
        RelayKitModule.override(binder(), OutboxStore.class).to(JdbcOutboxStore.class);
        // The relay holds rows for this storage's lease and purges sent rows after its retention.
        RelayKitModule.override(binder(), OutboxRelaySettings.class)
            .toInstance(new OutboxRelaySettings(h2.lease(), h2.retention()));
        // The storage's store: the SPI itself, or the final guard behind a configured fast tier.
        RelayKitModule.overrideStorageIdempotency(binder()).to(JdbcIdempotencyStore.class);
        RelayKitModule.override(binder(), DeadLetterStore.class).to(JdbcDeadLetterStore.class);
        RelayKitModule.override(binder(), VersionGuard.class).to(JdbcVersionGuard.class);
        RelayKitModule.override(binder(), QueueJournal.class).to(JdbcQueueJournal.class);
      }
    };
  }
}

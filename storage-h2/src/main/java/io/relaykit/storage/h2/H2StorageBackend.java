package io.relaykit.storage.h2;

import com.google.inject.AbstractModule;
import com.google.inject.Module;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.OutboxRelaySettings;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.QueueJournal;

/**
 * The storage backend {@code relaykit.storage=h2} selects (found through {@link
 * java.util.ServiceLoader}): installs an {@link H2StorageModule} and makes its stores relaykit's
 * {@link OutboxStore}, {@link IdempotencyStore}, {@link DeadLetterStore}, {@link VersionGuard} and
 * {@link QueueJournal}; with {@code relaykit.idempotency.fast-tier} set (say {@code redis}), the
 * {@link JdbcIdempotencyStore} is instead the durable tier, the final guard, behind that backend's
 * store. The outbox reports ENQUEUED to the injector's {@code LifecycleListener}. Reads the
 * {@code relaykit.h2.*} keys:
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>key</th><th>default</th></tr>
 *   <tr><td>{@code relaykit.h2.url}</td><td>required; a PostgreSQL URL selects PostgreSQL</td></tr>
 *   <tr><td>{@code relaykit.h2.username}, {@code relaykit.h2.password}</td><td>none</td></tr>
 *   <tr><td>{@code relaykit.h2.pool-size}</td><td>4</td></tr>
 *   <tr><td>{@code relaykit.h2.table-prefix}</td><td>{@code relaykit_}</td></tr>
 *   <tr><td>{@code relaykit.h2.lease}</td><td>{@code relaykit.relay.lease}; the injected
 *       relay's lease</td></tr>
 *   <tr><td>{@code relaykit.h2.retention}</td><td>{@code relaykit.idempotency.retention}; how
 *       long the injected relay keeps sent rows and the idempotency store DONE keys</td></tr>
 *   <tr><td>{@code relaykit.h2.journal-name}</td><td>{@code relaykit}</td></tr>
 *   <tr><td>{@code relaykit.h2.outbox-max-unsent}</td><td>none (unbounded)</td></tr>
 *   <tr><td>{@code relaykit.h2.outbox-over-bound}</td><td>{@code refuse}: an append at the
 *       bound throws {@code OutboxFullException}; {@code accept}: it is written, counted, and the
 *       relay's backlog verdict is OVER_BOUND</td></tr>
 *   <tr><td>{@code relaykit.h2.outbox-order-scope}</td><td>{@code key}: per-key order spans
 *       every destination; {@code key-per-destination}: a key is ordered per destination, so a
 *       failing row for one destination does not hold the key's rows for another</td></tr>
 *   <tr><td>{@code relaykit.h2.migrate}</td><td>{@code true}; {@code false} only verifies the
 *       schema version</td></tr>
 * </table>
 */
public final class H2StorageBackend implements BackendModuleProvider {
  public static final String URL = "relaykit.h2.url";
  public static final String USERNAME = "relaykit.h2.username";
  public static final String PASSWORD = "relaykit.h2.password";
  public static final String POOL_SIZE = "relaykit.h2.pool-size";
  public static final String TABLE_PREFIX = "relaykit.h2.table-prefix";
  public static final String LEASE = "relaykit.h2.lease";
  public static final String RETENTION = "relaykit.h2.retention";
  public static final String JOURNAL_NAME = "relaykit.h2.journal-name";
  public static final String MIGRATE = "relaykit.h2.migrate";
  public static final String OUTBOX_MAX_UNSENT = "relaykit.h2.outbox-max-unsent";
  public static final String OUTBOX_OVER_BOUND = "relaykit.h2.outbox-over-bound";
  public static final String OUTBOX_ORDER_SCOPE = "relaykit.h2.outbox-order-scope";

  private static OutboxOrderScope outboxOrderScope(RelayKitConfig config) {
    String scope = config.get(OUTBOX_ORDER_SCOPE).orElse("key");
    return switch (scope) {
      case "key" -> OutboxOrderScope.KEY;
      case "key-per-destination" -> OutboxOrderScope.KEY_PER_DESTINATION;
      default -> throw new IllegalArgumentException(OUTBOX_ORDER_SCOPE
          + " must be key or key-per-destination, was '" + scope + "'");
    };
  }

  private static OutboxBound outboxBound(RelayKitConfig config) {
    if (config.get(OUTBOX_MAX_UNSENT).isEmpty()) {
      if (config.get(OUTBOX_OVER_BOUND).isPresent()) {
        throw new IllegalArgumentException(OUTBOX_OVER_BOUND + " needs " + OUTBOX_MAX_UNSENT);
      }
      return OutboxBound.unbounded();
    }
    long max = config.getInt(OUTBOX_MAX_UNSENT, 0);
    String over = config.get(OUTBOX_OVER_BOUND).orElse("refuse");
    OutboxBound.OverBound policy = switch (over) {
      case "refuse" -> OutboxBound.OverBound.REFUSE;
      case "accept" -> OutboxBound.OverBound.ACCEPT;
      default -> throw new IllegalArgumentException(OUTBOX_OVER_BOUND
          + " must be refuse or accept, was '" + over + "'");
    };
    return new OutboxBound(max, policy);
  }

  @Override
  public Kind kind() {
    return Kind.STORAGE;
  }

  @Override
  public String name() {
    return "h2";
  }

  /**
   * @throws IllegalArgumentException naming the key and value when a setting is missing or
   *     invalid
   */
  @Override
  public Module module(RelayKitConfig config) {
    H2StorageConfig h2;
    try {
      h2 = H2StorageConfig.builder()
          .jdbcUrl(config.require(URL))
          .username(config.get(USERNAME).orElse(null))
          .password(config.get(PASSWORD).orElse(null))
          .poolSize(config.getInt(POOL_SIZE, H2StorageConfig.DEFAULT_POOL_SIZE))
          .tablePrefix(config.get(TABLE_PREFIX).orElse(H2StorageConfig.DEFAULT_TABLE_PREFIX))
          .lease(config.getDuration(LEASE, config.relayLease()))
          .retention(config.getDuration(RETENTION, config.idempotencyRetention()))
          .migrate(config.getBoolean(MIGRATE, true))
          .outboxBound(outboxBound(config))
          .outboxOrderScope(outboxOrderScope(config))
          .build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid relaykit.h2 settings: " + e.getMessage(), e);
    }
    String journalName = config.get(JOURNAL_NAME).orElse("relaykit");
    return new AbstractModule() {
      @Override
      protected void configure() {
        install(new H2StorageModule(h2, journalName));
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

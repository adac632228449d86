package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Binder;
import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import com.google.inject.name.Named;
import com.google.inject.name.Names;
import com.google.inject.binder.LinkedBindingBuilder;
import com.google.inject.multibindings.OptionalBinder;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.InMemoryVersionGuard;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.InMemoryJournal;
import io.relaykit.queue.QueueJournal;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Objects;

/**
 * Wires a relaykit deployment: binds the {@link RelayKitConfig}, gives every SPI an in-memory
 * default with {@link OptionalBinder#setDefault()}, and installs the storage and transport modules
 * the configuration names. A backend module replaces a default with {@link #override}; anything it
 * does not provide stays in memory, so {@code relaykit.storage=memory} (the default) runs with no
 * external service at all.
 *
 * <p>Defaults, each a singleton so every service of the injector shares one state:
 * <ul>
 *   <li>{@link IdempotencyStore}: the storage backend's store (see {@link
 *       #overrideStorageIdempotency}), by default an {@link InMemoryIdempotencyStore} on the bound
 *       clock keeping DONE keys for {@code relaykit.idempotency.retention}. With {@code
 *       relaykit.idempotency.fast-tier=<backend>} it is instead a {@link TieredIdempotencyStore}
 *       (also bound as such, for {@link TieredIdempotencyStore#fastTierInUse()}) of that backend's
 *       store in front of the storage backend's: the fast path first, the storage's store as the
 *       final guard, so {@code relaykit.storage=jdbc} with {@code fast-tier=redis} is Redis in front
 *       of the database's unique key. Neither adapter knows the other: this module composes
 *       them;</li>
 *   <li>{@link VersionGuard}: {@link InMemoryVersionGuard};</li>
 *   <li>{@link DeadLetterStore}: {@link InMemoryDeadLetterStore};</li>
 *   <li>{@link OutboxStore}: {@link InMemoryOutboxStore};</li>
 *   <li>{@link QueueJournal}: {@link InMemoryJournal} (one per injector);</li>
 *   <li>{@link Publisher} and {@link Subscriber}: one {@link InProcessTransport}, on the bound
 *       clock, listeners and {@link DeadLetterStore} (so its dead letters land in the chosen
 *       storage);</li>
 *   <li>{@link InstantSource}: the system clock; {@link LifecycleListener}: a no-op;
 *       {@link MetricsListener}: a no-op. Override either (with {@link #override}) to see what
 *       every service of the injector reports: the relay, the in-process transport, and the
 *       Kafka and RabbitMQ transports' modules all take the bound ones (a subscription whose
 *       spec names its own {@link io.relaykit.message.SubscriptionSpec#metrics()} keeps it);
 *       {@link RetryPolicy}: from the config's {@code relaykit.retry.*} settings;</li>
 *   <li>{@link OutboxRelay}: one relay from the bound {@link OutboxStore} through the bound {@link
 *       Publisher}, dead-lettering into the bound {@link DeadLetterStore}, with the bound retry
 *       policy, clock and listeners (its backlog, verdict and dead-letter depth samples go to the
 *       bound {@link MetricsListener}), claiming {@code relaykit.relay.batch-size} rows under a {@code
 *       relaykit.relay.lease} lease and polling an idle outbox every {@code
 *       relaykit.relay.poll-interval}. It is built, not started: call {@link OutboxRelay#start()}
 *       in the processes that should relay (or {@link OutboxRelay#runOnce()} from your own
 *       scheduler), and {@link OutboxRelay#close(java.time.Duration)} before closing the publisher
 *       and the store.</li>
 * </ul>
 * In-memory state is lost with the process: the defaults suit tests, the demo and single-process
 * deployments whose work is itself in memory. They take the bound clock, so overriding {@link
 * InstantSource} (with the TCK's {@code FakeClock}, say) moves their time too. Guice closes
 * nothing: the application closes the {@link OutboxRelay} it started, then the {@link Publisher}
 * and {@link Subscriber}, when it stops.
 *
 * <pre>{@code
 * Injector injector = Guice.createInjector(new RelayKitModule(RelayKitConfig.fromSystem()));
 * }</pre>
 */
public final class RelayKitModule extends AbstractModule {

  private static final String STORAGE_IDEMPOTENCY_NAME = "relaykit.idempotency.storage";
  private static final String FAST_TIER_IDEMPOTENCY_NAME = "relaykit.idempotency.fast-tier";
  /** The storage backend's idempotency store; see {@link #overrideStorageIdempotency}. */
  static final Key<IdempotencyStore> STORAGE_IDEMPOTENCY =
      Key.get(IdempotencyStore.class, Names.named(STORAGE_IDEMPOTENCY_NAME));
  /** The fast tier's store, bound by {@link BackendModuleProvider#idempotencyFastTier}. */
  static final Key<IdempotencyStore> FAST_TIER_IDEMPOTENCY =
      Key.get(IdempotencyStore.class, Names.named(FAST_TIER_IDEMPOTENCY_NAME));

  private final RelayKitConfig config;
  private final Module backends;

  /**
   * Uses the backends registered on the class path.
   *
   * @param config the deployment's configuration
   * @throws IllegalArgumentException if the config names an unknown backend (the message lists
   *     the known ones) or a backend's own settings are invalid
   */
  public RelayKitModule(RelayKitConfig config) {
    this(config, Backends.discover());
  }

  /**
   * Uses the given backends; resolves the names in {@code config} now, so a bad name fails here
   * rather than inside {@code Guice.createInjector}.
   *
   * @param config the deployment's configuration
   * @param backends the backends to choose from
   * @throws IllegalArgumentException if the config names an unknown backend (the message lists
   *     the known ones) or a backend's own settings are invalid
   */
  public RelayKitModule(RelayKitConfig config, Backends backends) {
    this.config = Objects.requireNonNull(config, "config");
    this.backends = Objects.requireNonNull(backends, "backends").select(config);
  }

  /**
   * Starts the binding that replaces relaykit's default for {@code spi}; call it from a backend
   * module (or an application's own module) as {@code RelayKitModule.override(binder(),
   * IdempotencyStore.class).to(...)}. At most one module may override a given SPI in one injector.
   *
   * @param <T> the SPI's type
   * @param binder the binder of the overriding module
   * @param spi the SPI to override
   * @return the binding builder to complete
   */
  public static <T> LinkedBindingBuilder<T> override(Binder binder, Class<T> spi) {
    return OptionalBinder.newOptionalBinder(binder, spi).setBinding();
  }

  /**
   * Starts the binding of a storage backend's {@link IdempotencyStore}; storage backends call
   * this rather than {@code override(binder, IdempotencyStore.class)}. Without a fast tier the
   * {@link IdempotencyStore} SPI is this store. With {@code relaykit.idempotency.fast-tier} set it
   * is the durable tier, the final guard, behind the fast tier's store in a {@link
   * TieredIdempotencyStore}. (A backend that overrides the SPI itself cannot be layered: its
   * override wins over the tiered store, and a configured fast tier goes unused.)
   *
   * @param binder the binder of the storage backend's module
   * @return the binding builder to complete
   */
  public static LinkedBindingBuilder<IdempotencyStore> overrideStorageIdempotency(Binder binder) {
    return OptionalBinder.newOptionalBinder(binder, STORAGE_IDEMPOTENCY).setBinding();
  }

  @Override
  protected void configure() {
    bind(RelayKitConfig.class).toInstance(config);

    defaultOf(InstantSource.class).toInstance(InstantSource.system());
    defaultOf(LifecycleListener.class).toInstance(LifecycleListener.noop());
    defaultOf(MetricsListener.class).toInstance(MetricsListener.noop());
    defaultOf(RetryPolicy.class).toInstance(config.retryPolicy());
    defaultOf(OutboxRelaySettings.class).toInstance(
        new OutboxRelaySettings(config.relayLease(), OutboxRelaySettings.DEFAULT_RETENTION));
    OptionalBinder.newOptionalBinder(binder(), STORAGE_IDEMPOTENCY).setDefault()
        .to(Key.get(IdempotencyStore.class, InMemory.class));
    if (config.idempotencyFastTier().isPresent()) {
      defaultOf(IdempotencyStore.class).to(TieredIdempotencyStore.class);
      install(new TieredIdempotencyModule());
    } else {
      defaultOf(IdempotencyStore.class).to(STORAGE_IDEMPOTENCY);
    }
    defaultOf(VersionGuard.class).to(Key.get(VersionGuard.class, InMemory.class));
    defaultOf(DeadLetterStore.class).to(Key.get(DeadLetterStore.class, InMemory.class));
    defaultOf(OutboxStore.class).to(Key.get(OutboxStore.class, InMemory.class));
    defaultOf(QueueJournal.class).to(Key.get(QueueJournal.class, InMemory.class));
    defaultOf(Publisher.class).to(Key.get(InProcessTransport.class, InMemory.class));
    defaultOf(Subscriber.class).to(Key.get(InProcessTransport.class, InMemory.class));
    defaultOf(OutboxRelay.class).to(Key.get(OutboxRelay.class, Configured.class));

    install(backends);
  }

  /*
   * The in-memory defaults are provider methods under @InMemory keys rather than instances so that
   * they are built only when no backend overrides them (outside Stage.PRODUCTION, which builds
   * every singleton) and so that they see the clock the injector really uses.
   */

  @Provides
  @Singleton
  @InMemory
  IdempotencyStore inMemoryIdempotencyStore(InstantSource clock) {
    return new InMemoryIdempotencyStore(clock, config.idempotencyRetention());
  }

  @Provides
  @Singleton
  @InMemory
  VersionGuard inMemoryVersionGuard() {
    return new InMemoryVersionGuard();
  }

  @Provides
  @Singleton
  @InMemory
  DeadLetterStore inMemoryDeadLetterStore() {
    return new InMemoryDeadLetterStore();
  }

  @Provides
  @Singleton
  @InMemory
  OutboxStore inMemoryOutboxStore() {
    return new InMemoryOutboxStore();
  }

  @Provides
  @Singleton
  @InMemory
  QueueJournal inMemoryJournal() {
    return new InMemoryJournal();
  }

  /** One transport serves as both default publisher and subscriber, so they see one another. */
  @Provides
  @Singleton
  @InMemory
  InProcessTransport inProcessTransport(InstantSource clock, DeadLetterStore deadLetters,
      LifecycleListener listener, MetricsListener metrics) {
    return InProcessTransport.builder().clock(clock).deadLetters(deadLetters).listener(listener)
        .metrics(metrics).build();
  }

  /**
   * The relay over whatever the injector binds as outbox, publisher and dead letters, so a chosen
   * backend's stores and transport are the ones it uses, with the lease and retention of the bound
   * {@link OutboxRelaySettings} (a storage backend's own, where it sets them). Not started: a relay is a background
   * thread that publishes, and whether this process should run one is the application's choice.
   */
  @Provides
  @Singleton
  @Configured
  OutboxRelay outboxRelay(OutboxStore store, Publisher publisher, DeadLetterStore deadLetters,
      RetryPolicy retryPolicy, InstantSource clock, LifecycleListener listener,
      MetricsListener metrics, OutboxRelaySettings settings) {
    OutboxRelay.Builder b = OutboxRelay.builder(store, publisher, deadLetters);
    if (config.relayBatchSizeFixed()) {
      b.batchSize(config.relayBatchSize());
    }
    return b
        .retryPolicy(retryPolicy)
        .clock(clock)
        .listener(listener)
        .metrics(metrics)
        .lease(settings.lease())
        .retention(settings.retention())
        .confirmTimeout(relayConfirmTimeout(settings.lease()))
        .pollInterval(config.relayPollInterval())
        .build();
  }

  /**
   * The relay's confirm wait: its own default of 10 s, or half the lease when the lease is shorter
   * than 20 s, since confirms must be awaited well inside the lease or rows would be taken over by
   * another relay while this one still waits for them.
   */
  static Duration relayConfirmTimeout(Duration lease) {
    return io.relaykit.config.RelaySettings.confirmTimeoutFor(lease);
  }

  /**
   * Bound only when a fast tier is configured, since it needs the fast tier's store: the tiered
   * store retries a failed fast tier after 1 s, doubling to 30 s, on the bound clock.
   */
  private static final class TieredIdempotencyModule extends AbstractModule {
    @Provides
    @Singleton
    TieredIdempotencyStore tieredIdempotencyStore(
        @Named(FAST_TIER_IDEMPOTENCY_NAME) IdempotencyStore fast,
        @Named(STORAGE_IDEMPOTENCY_NAME) IdempotencyStore durable, InstantSource clock) {
      return new TieredIdempotencyStore(fast, durable, clock,
          Backoff.exponential(Duration.ofSeconds(1)).withMax(Duration.ofSeconds(30)));
    }
  }

  private <T> LinkedBindingBuilder<T> defaultOf(Class<T> spi) {
    return OptionalBinder.newOptionalBinder(binder(), spi).setDefault();
  }

  @Override
  public String toString() {
    return "RelayKitModule{storage=" + config.storage() + ", transport=" + config.transport() + "}";
  }
}

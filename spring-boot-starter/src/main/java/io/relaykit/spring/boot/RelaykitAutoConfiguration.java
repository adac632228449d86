package io.relaykit.spring.boot;

import io.relaykit.codec.Payloads;
import io.relaykit.config.CoreKeys;
import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.RelaySettings;
import io.relaykit.config.RetrySettings;
import io.relaykit.config.Settings;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.DatabaseClock;
import io.relaykit.storage.jdbc.Dialect;
import io.relaykit.storage.jdbc.JdbcConfigKeys;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageException;
import io.relaykit.storage.jdbc.OutboxOrderScope;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import io.relaykit.trace.TracePropagation;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.InstantSource;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * relaykit's beans in a Spring Boot application, from {@code relaykit.*} properties.
 *
 * <ul>
 *   <li>{@link Settings}: every {@code relaykit.*} property, validated by core (its keys and
 *       defaults, see {@link RelaykitEnvironment}); a bad value or an unknown key fails the
 *       context's start naming the key, before any bean is created; an unknown {@code
 *       relaykit.storage} or {@code relaykit.transport} names the property, the value and the
 *       values the starter wires.
 *   <li>Storage: {@code relaykit.storage=h2} opens relaykit-jdbc's {@link JdbcStorage} on the
 *       application's {@link DataSource} (H2 or PostgreSQL, dialect from the connection's URL;
 *       tables created or migrated unless {@code relaykit.jdbc.migrate=false}); the DataSource is the
 *       application's and is never closed by relaykit. Outbox, dead letters and idempotency keys
 *       are then the database's. Unset or {@code memory}: in-memory stores, as everywhere else in
 *       relaykit. {@code h2} without a DataSource bean fails the start with a message saying so.
 *   <li>{@link TransactionalOutbox}: appends in the caller's Spring transaction.
 *   <li>Transport ({@link Publisher} and {@link Subscriber}): unset or {@code
 *       relaykit.transport=memory}, one {@link InProcessTransport} (dead letters into the storage's
 *       {@link DeadLetterStore}); {@code kafka} ({@code relaykit.kafka.*}, or {@code
 *       spring.kafka.bootstrap-servers}) and {@code rabbitmq} ({@code relaykit.rabbitmq.*}, or
 *       {@code spring.rabbitmq.*}) need relaykit-kafka or relaykit-rabbitmq on the class path; a
 *       missing one fails the start naming the artifact.
 *   <li>{@link OutboxRelay} from {@code relaykit.relay.*} and {@code relaykit.retry.*}, run by a
 *       {@link RelaykitRelayLifecycle} unless {@code relaykit.spring.relay.enabled=false}.
 *   <li>{@link RelaykitListenerRegistry}: subscribes the {@link RelaykitListener} methods, unless
 *       {@code relaykit.spring.listeners.enabled=false}.
 *   <li>{@link RelaykitMonitoring}: the application's {@link MetricsListener} and {@link
 *       LifecycleListener} beans (the Micrometer binder among them), composed and handed to the
 *       starter's transport (the default listener of every subscription on it, {@link
 *       RelaykitListener} methods included) and to the relay, so each step and each meter is
 *       reported once.
 * </ul>
 *
 * <p>Every bean backs off when the application defines its own of the same type. Failure at
 * startup (database or broker unreachable, tables newer than this build) fails the context's start
 * with the adapter's exception; nothing is retried. Beans are closed in reverse dependency order:
 * the relay before the publisher, the publisher before the storage.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration"})
public class RelaykitAutoConfiguration {

  /** Sent outbox rows are kept this long on the in-memory storage (as in relaykit-guice). */
  static final Duration MEMORY_RETENTION = Duration.ofDays(7);

  /** Created by Spring. */
  public RelaykitAutoConfiguration() {
  }

  /**
   * Core's settings for the application's {@code relaykit.*} properties.
   *
   * @param env the application's environment
   * @return the validated settings
   */
  @Bean
  @ConditionalOnMissingBean
  public Settings relaykitSettings(Environment env) {
    return RelaykitEnvironment.settings(env);
  }

  /**
   * Checks the {@code relaykit.*} properties before any bean is created (static: a bean factory
   * post-processor), so a bad value fails the start with core's message naming the key rather
   * than as a missing bean of a configuration the value did not select: an unknown {@code
   * relaykit.storage} or {@code relaykit.transport} would otherwise match no storage or transport
   * configuration and fail as "no qualifying bean of type DeadLetterStore". With the starter's
   * {@link Settings} bean every property is checked (as that bean then checks them again); with
   * an application's own {@code Settings} bean only the storage and the transport.
   *
   * @param env the application's environment
   * @return the post-processor
   * @throws BeanInitializationException (when the context starts) caused by core's {@code
   *     IllegalArgumentException}, naming the property, the value and the allowed values
   */
  @Bean
  public static BeanFactoryPostProcessor relaykitSettingsCheck(Environment env) {
    return beanFactory -> {
      try {
        if (beanFactory.containsBeanDefinition("relaykitSettings")) {
          RelaykitEnvironment.settings(env);
        } else {
          RelaykitEnvironment.checkBackends(env);
        }
      } catch (IllegalArgumentException e) {
        throw new BeanInitializationException("relaykit's configuration is invalid: "
            + e.getMessage(), e);
      }
    };
  }

  /**
   * The relay over the outbox, the transport's publisher and the storage's dead letters; built,
   * not started (see {@link RelaykitRelayLifecycle}).
   *
   * @param outbox the outbox
   * @param publisher the transport's publisher
   * @param deadLetters the dead-letter store
   * @param storage the JDBC storage, when {@code relaykit.storage=h2}
   * @param settings the settings
   * @param monitoring the application's listeners (see {@link RelaykitMonitoring#relayLifecycle})
   * @param customizers applied to the builder last, in order
   * @param tracing the application's {@link TracePropagation} bean (the starter's observations),
   *     instead of the discovered one
   * @return the relay
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public OutboxRelay relaykitOutboxRelay(TransactionalOutbox outbox, Publisher publisher,
      DeadLetterStore deadLetters, ObjectProvider<JdbcStorage> storage, Settings settings,
      RelaykitMonitoring monitoring, ObjectProvider<RelaykitRelayCustomizer> customizers,
      ObjectProvider<TracePropagation> tracing) {
    RelaySettings relay = RelaySettings.from(settings);
    JdbcStorage jdbc = storage.getIfAvailable();
    Duration lease = jdbc == null ? relay.lease()
        : settings.getDuration(JdbcConfigKeys.LEASE, relay.lease());
    OutboxRelay.Builder b = OutboxRelay.builder(outbox.store(), publisher, deadLetters)
        .retryPolicy(RetrySettings.from(settings).toPolicy())
        .lease(lease)
        .confirmTimeout(RelaySettings.confirmTimeoutFor(lease))
        .retention(jdbc == null ? MEMORY_RETENTION : jdbc.retention())
        .pollInterval(relay.pollInterval());
    if (relay.fixedBatchSize()) {
      b.batchSize(relay.batchSize());
    }
    if (monitoring.hasMetrics()) {
      b.metrics(monitoring.metrics());
    }
    if (monitoring.hasLifecycle()) {
      b.listener(monitoring.relayLifecycle(publisher));
    }
    TracePropagation propagation = tracing.getIfUnique();
    if (propagation != null) {
      b.tracePropagation(propagation);
    }
    customizers.orderedStream().forEach(c -> c.customize(b));
    return b.build();
  }

  /**
   * Runs the relay with the context.
   *
   * @param relay the relay
   * @param env the environment, for {@code spring.lifecycle.timeout-per-shutdown-phase}
   * @return the lifecycle
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(name = SpringConfigKeys.RELAY_ENABLED, havingValue = "true",
      matchIfMissing = true)
  public RelaykitRelayLifecycle relaykitRelayLifecycle(OutboxRelay relay, Environment env) {
    return new RelaykitRelayLifecycle(relay, RelaykitEnvironment.shutdownPhaseTimeout(env));
  }

  /**
   * The application's {@link MetricsListener} and {@link LifecycleListener} beans, composed for
   * the transport, the subscriptions and the relay.
   *
   * @param metrics the metrics listener beans, resolved at the first use
   * @param lifecycle the lifecycle listener beans, resolved at the first use
   * @return the holder
   */
  @Bean
  public RelaykitMonitoring relaykitMonitoring(ObjectProvider<MetricsListener> metrics,
      ObjectProvider<LifecycleListener> lifecycle) {
    return new RelaykitMonitoring(metrics, lifecycle);
  }

  /**
   * Subscribes the {@link RelaykitListener} methods (static: a bean post-processor).
   *
   * @param subscriber the transport's subscriber, resolved at start
   * @param idempotency the idempotency store, resolved at start
   * @param settings the settings, resolved when a listener method is found
   * @param payloads the codecs for listener methods that take a typed payload, resolved when
   *     such a method is found
   * @param tracing the application's {@link TracePropagation} bean (the starter's observations),
   *     around each handler call; none for no tracing
   * @param env the environment
   * @return the registry
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(name = SpringConfigKeys.LISTENERS_ENABLED, havingValue = "true",
      matchIfMissing = true)
  public static RelaykitListenerRegistry relaykitListenerRegistry(
      ObjectProvider<Subscriber> subscriber, ObjectProvider<IdempotencyStore> idempotency,
      ObjectProvider<Settings> settings, ObjectProvider<Payloads> payloads,
      ObjectProvider<TracePropagation> tracing, Environment env) {
    return new RelaykitListenerRegistry(subscriber, idempotency, settings, payloads,
        RelaykitEnvironment.shutdownPhaseTimeout(env)).withTracing(tracing);
  }

  /**
   * The JDBC storage on the application's DataSource ({@code relaykit.storage=jdbc}, or its
   * aliases {@code h2} and {@code postgres}).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({JdbcStorage.class, org.springframework.jdbc.datasource.DataSourceUtils.class})
  @Conditional(JdbcStorageSelected.class)
  static class JdbcStorageConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    JdbcStorage relaykitJdbcStorage(ObjectProvider<DataSource> dataSources, Settings settings,
        RelaykitMonitoring monitoring) {
      DataSource dataSource = dataSources.getIfUnique();
      if (dataSource == null) {
        throw new IllegalStateException("relaykit.storage=jdbc needs one DataSource bean"
            + " (spring.datasource.url, or your own DataSource); found "
            + dataSources.stream().count());
      }
      return openOn(dataSource, settings, monitoring.lifecycle());
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalOutbox relaykitOutbox(JdbcStorage storage, Settings settings,
        ObjectProvider<Payloads> payloads, ObjectProvider<TracePropagation> tracing,
        RelaykitMonitoring monitoring) {
      OutboxOrderScope scope = settings.getEnum(JdbcConfigKeys.OUTBOX_ORDER_SCOPE,
          OutboxOrderScope.class, OutboxOrderScope.KEY);
      OutboxBound bound = OutboxBound.unbounded();
      if (settings.isSet(JdbcConfigKeys.OUTBOX_MAX_UNSENT)) {
        bound = new OutboxBound(settings.getLong(JdbcConfigKeys.OUTBOX_MAX_UNSENT, 1),
            settings.getEnum(JdbcConfigKeys.OUTBOX_OVER_BOUND, OutboxBound.OverBound.class,
                OutboxBound.OverBound.REFUSE));
      }
      // The application's metrics listeners (the Micrometer binder among them) see each claim's
      // walk; resolved at the first claim, not here, so no listener bean is created early.
      MetricsListener walks = new MetricsListener() {
        @Override
        public void outboxClaimWalked(String store, long heads, long rows) {
          monitoring.metrics().outboxClaimWalked(store, heads, rows);
        }
      };
      TracePropagation propagation = tracing.getIfUnique();
      io.relaykit.storage.jdbc.JdbcOutboxStore store = storage.outboxStore(bound, scope, walks);
      return observed(TransactionalOutbox.jdbc(propagation == null ? store
          : store.withTracePropagation(propagation), storage.dataSource())
          .withPayloads(payloads.getIfAvailable()), propagation);
    }

    @Bean
    @ConditionalOnMissingBean
    DeadLetterStore relaykitDeadLetterStore(JdbcStorage storage) {
      return storage.deadLetterStore();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotencyStore relaykitIdempotencyStore(JdbcStorage storage) {
      return storage.idempotencyStore();
    }
  }

  /** The in-memory storage: nothing (or {@code relaykit.storage=memory}) configured. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "relaykit.storage", havingValue = "memory", matchIfMissing = true)
  static class MemoryStorageConfiguration {

    @Bean
    @ConditionalOnMissingBean
    InMemoryOutboxStore relaykitOutboxStore() {
      return new InMemoryOutboxStore();
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalOutbox relaykitOutbox(InMemoryOutboxStore store,
        ObjectProvider<Payloads> payloads, ObjectProvider<TracePropagation> tracing) {
      return observed(TransactionalOutbox.inMemory(store).withPayloads(payloads.getIfAvailable()),
          tracing.getIfUnique());
    }

    @Bean
    @ConditionalOnMissingBean
    DeadLetterStore relaykitDeadLetterStore() {
      return new InMemoryDeadLetterStore();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotencyStore relaykitIdempotencyStore(Settings settings) {
      return new InMemoryIdempotencyStore(InstantSource.system(),
          IdempotencySettings.from(settings).retention());
    }
  }

  /** The in-process transport: nothing (or {@code relaykit.transport=memory}) configured. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "relaykit.transport", havingValue = "memory",
      matchIfMissing = true)
  static class InProcessTransportConfiguration {

    /** One transport as both publisher and subscriber, so they see one another. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({Publisher.class, Subscriber.class})
    InProcessTransport relaykitInProcessTransport(DeadLetterStore deadLetters,
        RelaykitMonitoring monitoring) {
      return monitoring.reportsTo(InProcessTransport.builder().deadLetters(deadLetters)
          .listener(monitoring.lifecycle()).metrics(monitoring.metrics()).build());
    }
  }

  /** {@code relaykit.transport=kafka}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(KafkaPublisher.class)
  @ConditionalOnProperty(name = "relaykit.transport", havingValue = "kafka")
  static class KafkaTransportConfiguration {

    @Bean
    @ConditionalOnMissingBean
    KafkaTransportConfig relaykitKafkaConfig(Settings settings, RelaykitMonitoring monitoring) {
      return KafkaTransportConfig.from(settings).toBuilder().listener(monitoring.lifecycle())
          .metrics(monitoring.metrics()).build();
    }

    /** Reports to the application's listeners when the config is the starter's. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(Publisher.class)
    KafkaPublisher relaykitKafkaPublisher(KafkaTransportConfig config,
        RelaykitMonitoring monitoring) {
      KafkaPublisher publisher = KafkaPublisher.create(config);
      return config.listener() == monitoring.lifecycle() ? monitoring.reportsTo(publisher)
          : publisher;
    }

    /** Consumer groups, or share groups with {@code relaykit.kafka.group-type=share}. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(Subscriber.class)
    Subscriber relaykitKafkaSubscriber(KafkaTransportConfig config) {
      return config.groupType() == KafkaTransportConfig.GroupType.SHARE
          ? KafkaShareSubscriber.create(config) : KafkaSubscriber.create(config);
    }
  }

  /** {@code relaykit.transport=rabbitmq}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(RabbitMqPublisher.class)
  @ConditionalOnProperty(name = "relaykit.transport", havingValue = "rabbitmq")
  static class RabbitMqTransportConfiguration {

    @Bean
    @ConditionalOnMissingBean
    RabbitMqTransportConfig relaykitRabbitMqConfig(Settings settings) {
      return RabbitMqTransportConfig.from(settings);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(Publisher.class)
    RabbitMqPublisher relaykitRabbitMqPublisher(RabbitMqTransportConfig config,
        RelaykitMonitoring monitoring) {
      return monitoring.reportsTo(RabbitMqPublisher.create(config, monitoring.lifecycle(),
          InstantSource.system()));
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(Subscriber.class)
    RabbitMqSubscriber relaykitRabbitMqSubscriber(RabbitMqTransportConfig config,
        RelaykitMonitoring monitoring) {
      return RabbitMqSubscriber.create(config, monitoring.lifecycle(), monitoring.metrics(),
          InstantSource.system());
    }
  }

  /** A transport named but its adapter missing: fail the start naming the artifact. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("io.relaykit.transport.kafka.KafkaPublisher")
  @ConditionalOnProperty(name = "relaykit.transport", havingValue = "kafka")
  static class KafkaMissing {
    KafkaMissing() {
      throw new IllegalStateException("relaykit.transport=kafka needs io.relaykit:relaykit-kafka"
          + " on the class path");
    }
  }

  /** A transport named but its adapter missing: fail the start naming the artifact. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("io.relaykit.transport.rabbitmq.RabbitMqPublisher")
  @ConditionalOnProperty(name = "relaykit.transport", havingValue = "rabbitmq")
  static class RabbitMqMissing {
    RabbitMqMissing() {
      throw new IllegalStateException("relaykit.transport=rabbitmq needs"
          + " io.relaykit:relaykit-rabbitmq on the class path");
    }
  }

  /** {@code relaykit.storage=jdbc} but relaykit-jdbc missing: fail the start naming the artifact. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("io.relaykit.storage.jdbc.JdbcStorage")
  @Conditional(JdbcStorageSelected.class)
  static class JdbcMissing {
    JdbcMissing() {
      throw new IllegalStateException("relaykit.storage (jdbc, h2 or postgres) needs io.relaykit:relaykit-jdbc on the"
          + " class path");
    }
  }

  /** {@code relaykit.storage=jdbc} but Spring JDBC missing: fail the start naming the artifact. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("org.springframework.jdbc.datasource.DataSourceUtils")
  @Conditional(JdbcStorageSelected.class)
  static class SpringJdbcMissing {
    SpringJdbcMissing() {
      throw new IllegalStateException("relaykit.storage (jdbc, h2 or postgres) needs Spring JDBC on the class path"
          + " (org.springframework.boot:spring-boot-starter-jdbc), for the DataSource and its"
          + " transactions");
    }
  }

  /**
   * Opens relaykit-jdbc on {@code dataSource} with the {@code relaykit.jdbc.*} settings that apply
   * to a DataSource the application owns (table prefix, retention, migrate, outbox bound and
   * order scope); the defaults are relaykit-jdbc's.
   *
   * @param dataSource the application's DataSource
   * @param settings the settings
   * @return the open storage
   */
  static JdbcStorage openOn(DataSource dataSource, Settings settings) {
    return openOn(dataSource, settings, LifecycleListener.noop());
  }

  /**
   * Opens relaykit-jdbc on {@code dataSource}, reporting to {@code listener} ({@code ENQUEUED}).
   *
   * @param dataSource the application's DataSource
   * @param settings the settings
   * @param listener the composed lifecycle listener
   * @return the open storage
   */
  static JdbcStorage openOn(DataSource dataSource, Settings settings,
      LifecycleListener listener) {
    String url;
    try (Connection c = dataSource.getConnection()) {
      url = c.getMetaData().getURL();
    } catch (SQLException e) {
      throw new JdbcStorageException("relaykit cannot reach the application's DataSource to"
          + " detect its database: " + e.getMessage(), e);
    }
    JdbcStorageConfig.checkStorageName(settings.getString(CoreKeys.STORAGE, null), url);
    String prefix = settings.getString(JdbcConfigKeys.TABLE_PREFIX,
        JdbcStorageConfig.DEFAULT_TABLE_PREFIX);
    return JdbcStorage.open(dataSource, Dialect.forUrl(url), prefix,
        settings.getDuration(JdbcConfigKeys.RETENTION,
            IdempotencySettings.from(settings).retention()),
        InstantSource.system(), DatabaseClock.database(), listener,
        settings.getBoolean(JdbcConfigKeys.MIGRATE, true))
        .outboxNotifications(settings.getBoolean(JdbcConfigKeys.OUTBOX_NOTIFICATIONS, true))
        .outboxWakeInterval(settings.getDuration(JdbcConfigKeys.OUTBOX_WAKE_INTERVAL,
            JdbcStorage.DEFAULT_OUTBOX_WAKE_INTERVAL));
  }

  /** {@code outbox} observing its appends when {@code propagation} observes them. */
  static TransactionalOutbox observed(TransactionalOutbox outbox, TracePropagation propagation) {
    return propagation instanceof TransactionalOutbox.AppendObservation o
        ? outbox.withObservation(o) : outbox;
  }
}

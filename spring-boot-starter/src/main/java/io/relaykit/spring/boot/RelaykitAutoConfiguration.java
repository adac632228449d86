package io.relaykit.spring.boot;

import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.Settings;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.storage.h2.DatabaseClock;
import io.relaykit.storage.h2.Dialect;
import io.relaykit.storage.h2.H2ConfigKeys;
import io.relaykit.storage.h2.H2StorageConfig;
import io.relaykit.storage.h2.JdbcStorage;
import io.relaykit.storage.h2.JdbcStorageException;
import io.relaykit.storage.h2.OutboxOrderScope;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.InstantSource;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * relaykit's beans in a Spring Boot application, from {@code relaykit.*} properties.
 *
 * <ul>
 *   <li>{@link Settings}: the properties validated by core (its keys and defaults); a bad value
 *       fails the context's start naming the key.
 *   <li>Storage: {@code relaykit.storage=h2} opens relaykit-jdbc's {@link JdbcStorage} on the
 *       application's {@link DataSource} (H2 or PostgreSQL, dialect from the connection's URL;
 *       tables created or migrated unless {@code relaykit.h2.migrate=false}); the DataSource is the
 *       application's and is never closed by relaykit. Unset or {@code memory}: an {@link
 *       InMemoryOutboxStore}, as everywhere else in relaykit. {@code h2} without a DataSource
 *       bean fails the start with a message saying so.
 *   <li>{@link TransactionalOutbox}: appends in the caller's Spring transaction.
 * </ul>
 *
 * <p>Every bean backs off when the application defines its own of the same type. Failure at
 * startup (database unreachable, tables newer than this build) fails the context's start with
 * relaykit-jdbc's exception; nothing is retried.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration"})
@EnableConfigurationProperties(RelaykitProperties.class)
public class RelaykitAutoConfiguration {

  /** Created by Spring. */
  public RelaykitAutoConfiguration() {
  }

  /**
   * Core's settings for the application's {@code relaykit.*} properties.
   *
   * @param properties the bound properties
   * @return the validated settings
   */
  @Bean
  @ConditionalOnMissingBean
  public Settings relaykitSettings(RelaykitProperties properties) {
    return properties.toSettings();
  }

  /** The JDBC storage on the application's DataSource ({@code relaykit.storage=h2}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({JdbcStorage.class, org.springframework.jdbc.datasource.DataSourceUtils.class})
  @ConditionalOnProperty(name = "relaykit.storage", havingValue = "h2")
  static class JdbcStorageConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    JdbcStorage relaykitJdbcStorage(ObjectProvider<DataSource> dataSources, Settings settings) {
      DataSource dataSource = dataSources.getIfUnique();
      if (dataSource == null) {
        throw new IllegalStateException("relaykit.storage=h2 needs one DataSource bean"
            + " (spring.datasource.url, or your own DataSource); found "
            + dataSources.stream().count());
      }
      return openOn(dataSource, settings);
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalOutbox relaykitOutbox(JdbcStorage storage, Settings settings) {
      OutboxOrderScope scope = settings.getEnum(H2ConfigKeys.OUTBOX_ORDER_SCOPE,
          OutboxOrderScope.class, OutboxOrderScope.KEY);
      OutboxBound bound = OutboxBound.unbounded();
      if (settings.isSet(H2ConfigKeys.OUTBOX_MAX_UNSENT)) {
        bound = new OutboxBound(settings.getLong(H2ConfigKeys.OUTBOX_MAX_UNSENT, 1),
            settings.getEnum(H2ConfigKeys.OUTBOX_OVER_BOUND, OutboxBound.OverBound.class,
                OutboxBound.OverBound.REFUSE));
      }
      return TransactionalOutbox.jdbc(storage.outboxStore(bound, scope), storage.dataSource());
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
    TransactionalOutbox relaykitOutbox(InMemoryOutboxStore store) {
      return TransactionalOutbox.inMemory(store);
    }
  }

  /**
   * Opens relaykit-jdbc on {@code dataSource} with the {@code relaykit.h2.*} settings that apply
   * to a DataSource the application owns (table prefix, retention, migrate, outbox bound and
   * order scope); the defaults are relaykit-jdbc's.
   *
   * @param dataSource the application's DataSource
   * @param settings the settings
   * @return the open storage
   */
  static JdbcStorage openOn(DataSource dataSource, Settings settings) {
    String url;
    try (Connection c = dataSource.getConnection()) {
      url = c.getMetaData().getURL();
    } catch (SQLException e) {
      throw new JdbcStorageException("relaykit cannot reach the application's DataSource to"
          + " detect its database: " + e.getMessage(), e);
    }
    String prefix = settings.getString(H2ConfigKeys.TABLE_PREFIX,
        H2StorageConfig.DEFAULT_TABLE_PREFIX);
    return JdbcStorage.open(dataSource, Dialect.forUrl(url), prefix,
        settings.getDuration(H2ConfigKeys.RETENTION,
            IdempotencySettings.from(settings).retention()),
        InstantSource.system(), DatabaseClock.database(), LifecycleListener.noop(),
        settings.getBoolean(H2ConfigKeys.MIGRATE, true));
  }
}

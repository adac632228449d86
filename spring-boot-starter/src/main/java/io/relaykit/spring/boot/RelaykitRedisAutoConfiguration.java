package io.relaykit.spring.boot;

import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Redis as the idempotency fast path in front of the database ({@code
 * relaykit.idempotency.fast-tier=redis} with {@code relaykit.storage=h2}), as DESIGN.md has it:
 * "Redis fast path, database unique key as the final guard".
 *
 * <ul>
 *   <li>{@link RedisStorage}: relaykit-redis on {@code relaykit.redis.*} ({@link
 *       RedisStorageConfig#from}); where {@code relaykit.redis.uri} is unset, Spring Boot's {@code
 *       spring.data.redis.url} or {@code host}, {@code port}, {@code username}, {@code password},
 *       {@code database} and {@code ssl.enabled} (see {@link RelaykitEnvironment}). Closed with
 *       the context.
 *   <li>The application's {@link IdempotencyStore}: a {@link TieredIdempotencyStore} of Redis in
 *       front of relaykit-jdbc's store on the application's DataSource, so {@code
 *       RelaykitListener(idempotent = true)} and the Idempotency-Key filter use both tiers.
 * </ul>
 *
 * <p>What it guarantees: every claim that may lead to work is held in the database, so the
 * database alone decides who runs a key, and a key's DONE is written there first. A repeat of done
 * work costs one Redis call; new work a Redis and a database claim. When Redis fails (a command
 * times out after {@code relaykit.redis.command-timeout}, default 1s, or the connection is gone)
 * the store runs on the database alone, tries Redis again after 1s (doubling to 30s) and fills in
 * the DONEs Redis missed once it answers: an outage costs latency, never a duplicate. A database
 * failure is not masked. The start does not fail when Redis is down: it tries to connect once
 * (at most {@code relaykit.redis.connect-timeout}) and logs a warning if it cannot.
 *
 * <p>Not wired: {@code relaykit.storage=redis} (refused at start: Redis holds no outbox, and the
 * outbox must commit with the business rows), and Redis dead letters, version guard or journal
 * (use {@link RedisStorage} yourself). Each bean backs off when the application defines its own;
 * an application {@link IdempotencyStore} bean replaces the tiered store entirely. Without
 * io.relaykit:relaykit-redis on the class path, {@code fast-tier=redis} fails the start naming it.
 */
@AutoConfiguration(before = RelaykitAutoConfiguration.class)
public class RelaykitRedisAutoConfiguration {

  private static final System.Logger LOG =
      System.getLogger(RelaykitRedisAutoConfiguration.class.getName());

  /** Created by Spring. */
  public RelaykitRedisAutoConfiguration() {
  }

  /** The Redis storage and the tiered store, when relaykit-redis and relaykit-jdbc are present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "relaykit.idempotency.fast-tier", havingValue = "redis")
  @ConditionalOnClass(name = {"io.relaykit.storage.redis.RedisStorage",
      "io.relaykit.storage.jdbc.JdbcStorage"})
  static class RedisFastTier {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    RedisStorage relaykitRedisStorage(Settings settings) {
      RedisStorage redis = RedisStorage.open(RedisStorageConfig.from(settings));
      // Redis connects lazily: connect now, so the first claims do not find it "still
      // connecting" and put the tier into its back-off. Down is not fatal: the database decides.
      try {
        redis.idempotencyStore().status("relaykit-startup-check");
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "relaykit: Redis is not answering at start ("
            + e.getMessage() + "); idempotency runs on the database until it does");
      }
      return redis;
    }

    @Bean
    @ConditionalOnMissingBean(IdempotencyStore.class)
    TieredIdempotencyStore relaykitTieredIdempotencyStore(RedisStorage redis, JdbcStorage jdbc) {
      return TieredIdempotencyStore.of(redis.idempotencyStore(), jdbc.idempotencyStore());
    }
  }

  /** {@code fast-tier=redis} without relaykit-redis: fail the start naming the artifact. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "relaykit.idempotency.fast-tier", havingValue = "redis")
  @ConditionalOnMissingClass("io.relaykit.storage.redis.RedisStorage")
  static class RedisMissing {
    RedisMissing() {
      throw new IllegalStateException("relaykit.idempotency.fast-tier=redis needs"
          + " io.relaykit:relaykit-redis on the class path");
    }
  }

  /**
   * {@code relaykit.storage=redis}: fail the start before any bean needs the storage, saying why
   * (no bean would otherwise provide the outbox, and the failure would name a missing bean).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "relaykit.storage", havingValue = "redis")
  static class RedisStorageRefused {
    RedisStorageRefused() {
      throw new IllegalStateException(RelaykitEnvironment.REDIS_STORAGE_REFUSED);
    }
  }
}

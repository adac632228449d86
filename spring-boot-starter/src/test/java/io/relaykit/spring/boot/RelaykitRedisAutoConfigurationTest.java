package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisURI;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.mock.env.MockEnvironment;

/**
 * {@code relaykit.idempotency.fast-tier=redis} on H2 and the shared Redis at 127.0.0.1:6379
 * ({@code RELAYKIT_REDIS_URI}): every test writes under its own key prefix, so parallel runs never
 * meet.
 */
class RelaykitRedisAutoConfigurationTest {

  static final String REDIS = System.getenv().getOrDefault("RELAYKIT_REDIS_URI",
      "redis://127.0.0.1:6379");
  static final Duration LEASE = Duration.ofSeconds(30);

  /** Every key prefix a test used; their keys are deleted after each test. */
  private static final List<String> PREFIXES = new java.util.concurrent.CopyOnWriteArrayList<>();

  static String prefix() {
    String p = unique("rk-starter") + ":";
    PREFIXES.add(p);
    return p;
  }

  @org.junit.jupiter.api.AfterEach
  void deleteKeys() {
    io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(REDIS);
    try (io.lettuce.core.api.StatefulRedisConnection<String, String> c = client.connect()) {
      for (String p : PREFIXES) {
        io.lettuce.core.ScanCursor cursor = io.lettuce.core.ScanCursor.INITIAL;
        do {
          io.lettuce.core.KeyScanCursor<String> page = c.sync().scan(cursor,
              io.lettuce.core.ScanArgs.Builder.matches(p + "*").limit(1000));
          if (!page.getKeys().isEmpty()) {
            c.sync().unlink(page.getKeys().toArray(String[]::new));
          }
          cursor = page;
        } while (!cursor.isFinished());
      }
      PREFIXES.clear();
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
          RelaykitRedisAutoConfiguration.class, RelaykitAutoConfiguration.class));

  /** H2, Redis as fast tier under a fresh prefix, no relay. */
  private static String[] tiered(String... more) {
    List<String> p = new ArrayList<>(List.of(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.storage=h2",
        "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
        "relaykit.idempotency.fast-tier=redis",
        "relaykit.redis.key-prefix=" + prefix(),
        "relaykit.redis.command-timeout=10s",
        "relaykit.redis.connect-timeout=20s",
        "relaykit.spring.relay.enabled=false"));
    p.addAll(List.of(more));
    return p.toArray(String[]::new);
  }

  @Test
  @DisplayName("the context's IdempotencyStore is the tiered store: a key done through it is DONE"
      + " in Redis and in the database")
  void theIdempotencyStoreIsRedisInFrontOfTheDatabase() {
    java.util.concurrent.atomic.AtomicReference<RedisStorage> closed =
        new java.util.concurrent.atomic.AtomicReference<>();
    runner.withPropertyValues(tiered("relaykit.redis.uri=" + REDIS)).run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(IdempotencyStore.class)
          .hasSingleBean(RedisStorage.class);
      IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
      assertThat(store).isInstanceOf(TieredIdempotencyStore.class);
      assertThat(((TieredIdempotencyStore) store).fastTierInUse()).isTrue();
      RedisStorage redis = ctx.getBean(RedisStorage.class);
      JdbcStorage jdbc = ctx.getBean(JdbcStorage.class);

      String key = unique("order") + ":paid";
      Claim c = store.claim(key, LEASE);
      assertThat(c.isClaimed()).isTrue();
      assertThat(jdbc.idempotencyStore().status(key)).as("the database holds the claim")
          .contains(Claim.Status.CLAIMED);
      assertThat(store.complete(c)).isTrue();

      assertThat(jdbc.idempotencyStore().status(key)).contains(Claim.Status.DONE);
      assertThat(redis.idempotencyStore().status(key)).contains(Claim.Status.DONE);
      assertThat(store.claim(key, LEASE).status()).isEqualTo(Claim.Status.DONE);
      closed.set(redis);
    });
    assertThatThrownBy(() -> closed.get().idempotencyStore().status("after-close"))
        .as("the context closed its RedisStorage").isInstanceOf(RuntimeException.class);
  }

  @Test
  @DisplayName("the Idempotency-Key filter's protocol claims in both tiers")
  void theFilterUsesTheTieredStore() {
    new org.springframework.boot.test.context.runner.WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            RelaykitRedisAutoConfiguration.class, RelaykitAutoConfiguration.class,
            RelaykitWebAutoConfiguration.class))
        .withPropertyValues(tiered("relaykit.redis.uri=" + REDIS,
            "relaykit.spring.idempotency.enabled=true"))
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(RelaykitIdempotencyFilter.class);
          io.relaykit.idempotency.IdempotencyKeyProtocol protocol =
              ctx.getBean(io.relaykit.idempotency.IdempotencyKeyProtocol.class);
          String key = unique("req");
          assertThat(protocol.begin(key, "fp"))
              .isInstanceOf(io.relaykit.idempotency.IdempotencyKeyProtocol.Proceed.class);
          String stored = io.relaykit.idempotency.IdempotencyKeyProtocol.DEFAULT_NAMESPACE + key;
          assertThat(ctx.getBean(RedisStorage.class).idempotencyStore().status(stored))
              .as("Redis holds the request's claim").contains(Claim.Status.CLAIMED);
          assertThat(ctx.getBean(JdbcStorage.class).idempotencyStore().status(stored))
              .as("the database holds the request's claim").contains(Claim.Status.CLAIMED);
        });
  }

  @Test
  @DisplayName("without fast-tier the store is the database's and no Redis is opened")
  void noFastTierNoRedis() {
    runner.withPropertyValues(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.storage=h2", "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
        "relaykit.spring.relay.enabled=false").run(ctx -> {
          assertThat(ctx).hasNotFailed().doesNotHaveBean(RedisStorage.class)
              .doesNotHaveBean(TieredIdempotencyStore.class).hasSingleBean(IdempotencyStore.class);
        });
  }

  @Test
  @DisplayName("an idempotent @RelaykitListener runs a business key once; the key is DONE in Redis"
      + " and in the database")
  void anIdempotentListenerRunsOnceOnBothTiers() {
    String prefix = prefix();
    try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ListenerApp.class)
        .properties(
            "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=h2",
            "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
            "relaykit.idempotency.fast-tier=redis",
            "relaykit.redis.uri=" + REDIS,
            "relaykit.redis.key-prefix=" + prefix,
            "relaykit.redis.command-timeout=10s",
            "relaykit.relay.poll-interval=50ms",
            "server.port=0", "server.address=127.0.0.1",
            "test.orders-table=" + unique("orders"),
            "test.group=" + unique("g")).run()) {
      ctx.getBean(org.springframework.jdbc.core.JdbcTemplate.class).execute("CREATE TABLE "
          + ctx.getEnvironment().getProperty("test.orders-table") + " (id VARCHAR(64) PRIMARY KEY)");
      TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
      ListenerApp.Inbox inbox = ctx.getBean(ListenerApp.Inbox.class);
      String key = unique("k");
      String x = unique("x");
      String y = unique("y");

      service.place(x + ".1", key, false);
      service.place(x + ".2", key, false);
      service.place(y + ".1", key, false);

      Await.until(Duration.ofSeconds(30), "y.1 reaches the idempotent listener",
          () -> inbox.once.contains(y + ".1"));
      assertThat(inbox.once).containsExactly(x + ".1", y + ".1");
      assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(TieredIdempotencyStore.class);
      RedisStorage redis = ctx.getBean(RedisStorage.class);
      JdbcStorage jdbc = ctx.getBean(JdbcStorage.class);
      String group = ctx.getEnvironment().getProperty("test.group") + "-once";
      String scope = "listener:key:" + group.length() + ":" + group + ":";
      for (String k : List.of(scope + "once:" + x, scope + "once:" + y)) {
        // complete() writes the database first, then Redis: wait for the second write.
        Await.until(Duration.ofSeconds(10), k + " DONE in Redis",
            () -> redis.idempotencyStore().status(k).equals(
                java.util.Optional.of(Claim.Status.DONE)));
        assertThat(jdbc.idempotencyStore().status(k)).as(k + " in the database")
            .contains(Claim.Status.DONE);
      }
      assertThat(redis.config().keyPrefix()).isEqualTo(prefix);
    }
  }

  @Test
  @DisplayName("Spring Boot's spring.data.redis.* are reused when relaykit.redis.uri is unset")
  void springDataRedisIsReused() {
    RedisURI target = RedisURI.create(REDIS);
    runner.withPropertyValues(tiered("spring.data.redis.host=" + target.getHost(),
        "spring.data.redis.port=" + target.getPort(), "spring.data.redis.database=2"))
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          RedisStorage redis = ctx.getBean(RedisStorage.class);
          assertThat(redis.config().uri())
              .isEqualTo("redis://" + target.getHost() + ":" + target.getPort() + "/2");
          IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
          String key = unique("k");
          assertThat(store.complete(store.claim(key, LEASE))).isTrue();
          assertThat(redis.idempotencyStore().status(key)).contains(Claim.Status.DONE);
        });
  }

  @Test
  @DisplayName("relaykit.redis.uri wins over spring.data.redis.*")
  void relaykitsUriWins() {
    runner.withPropertyValues(tiered("relaykit.redis.uri=" + REDIS,
        "spring.data.redis.url=redis://127.0.0.1:1"))
        .run(ctx -> assertThat(ctx.getBean(RedisStorage.class).config().uri()).isEqualTo(REDIS));
  }

  @Test
  @DisplayName("spring.data.redis.* render as a Lettuce URI: url as is, else the parts")
  void springDataRedisToUri() {
    assertThat(uri(new MockEnvironment())).isEmpty();
    assertThat(uri(new MockEnvironment().withProperty("spring.data.redis.url",
        "redis://h:1/3"))).contains("redis://h:1/3");
    assertThat(uri(new MockEnvironment().withProperty("spring.data.redis.url", "redis://h:1")
        .withProperty("spring.data.redis.ssl.enabled", "true"))).contains("rediss://h:1");
    String parts = uri(new MockEnvironment().withProperty("spring.data.redis.host", "r.example")
        .withProperty("spring.data.redis.username", "app")
        .withProperty("spring.data.redis.password", "p@ss word")
        .withProperty("spring.data.redis.database", "4")).orElseThrow();
    RedisURI parsed = RedisURI.create(parts);
    assertThat(parsed.getHost()).isEqualTo("r.example");
    assertThat(parsed.getPort()).isEqualTo(6379);
    io.lettuce.core.RedisCredentials credentials =
        parsed.getCredentialsProvider().resolveCredentials().block();
    assertThat(credentials.getUsername()).isEqualTo("app");
    assertThat(new String(credentials.getPassword())).isEqualTo("p@ss word");
    assertThat(parsed.getDatabase()).isEqualTo(4);
    RedisURI passwordOnly = RedisURI.create(uri(new MockEnvironment()
        .withProperty("spring.data.redis.password", "secret")).orElseThrow());
    io.lettuce.core.RedisCredentials onlyPassword =
        passwordOnly.getCredentialsProvider().resolveCredentials().block();
    assertThat(new String(onlyPassword.getPassword())).isEqualTo("secret");
    assertThat(passwordOnly.getHost()).isEqualTo("localhost");
  }

  private static java.util.Optional<String> uri(MockEnvironment env) {
    return RelaykitEnvironment.springRedisUri(
        org.springframework.boot.context.properties.bind.Binder.get(env));
  }

  @Test
  @DisplayName("relaykit.storage=redis fails the start: the outbox needs the database; fast-tier"
      + " is named")
  void redisStorageIsRefused() {
    runner.withPropertyValues("relaykit.storage=redis").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.storage=redis is not wired")
            .hasMessageContaining("relaykit.storage=jdbc")
            .hasMessageContaining("relaykit.idempotency.fast-tier=redis"));
  }

  @Test
  @DisplayName("fast-tier=redis on the in-memory storage fails the start: no final guard")
  void fastTierNeedsTheDatabase() {
    runner.withPropertyValues("relaykit.idempotency.fast-tier=redis").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.storage=memory")
            .hasMessageContaining("set relaykit.storage=jdbc"));
  }

  @Test
  @DisplayName("a fast tier the starter does not wire fails the start listing those it does")
  void unknownFastTier() {
    runner.withPropertyValues("relaykit.idempotency.fast-tier=memcached").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("fast-tier=memcached is not wired")
            .hasMessageContaining("[none, redis]"));
  }

  @Test
  @DisplayName("fast-tier=redis without relaykit-redis names relaykit-redis")
  void redisMissing() {
    runner.withClassLoader(new FilteredClassLoader(RedisStorage.class))
        .withPropertyValues(tiered())
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("needs io.relaykit:relaykit-redis"));
  }

  @Test
  @DisplayName("Redis cut mid-run (FaultProxy): racing claims still run each key once, guarded by"
      + " the database")
  void redisOutageStillRunsEachKeyOnce() throws Exception {
    RedisURI target = RedisURI.create(REDIS);
    try (FaultProxy proxy = FaultProxy.to(target.getHost(), target.getPort())) {
      runner.withPropertyValues(tiered("relaykit.redis.uri=redis://127.0.0.1:" + proxy.port(),
          "relaykit.redis.command-timeout=500ms", "relaykit.redis.connect-timeout=1s",
          "relaykit.redis.reconnect-max-delay=200ms")).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            TieredIdempotencyStore store = ctx.getBean(TieredIdempotencyStore.class);
            JdbcStorage jdbc = ctx.getBean(JdbcStorage.class);
            RedisStorage redis = ctx.getBean(RedisStorage.class);
            // Loads the scripts through the proxy while it still forwards.
            String warm = unique("warm");
            assertThat(store.complete(store.claim(warm, LEASE))).isTrue();
            assertThat(redis.idempotencyStore().status(warm)).contains(Claim.Status.DONE);
            assertThat(store.fastTierInUse()).isTrue();

            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 80; i++) {
              keys.add(unique("order") + ":sms");
            }
            Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
            race(store, keys, effects, 4, () -> {
              proxy.refuseConnections();
              proxy.cutConnections();
            });

            assertThat(store.fastTierInUse()).as("Redis is out of use after the cut").isFalse();
            for (String k : keys) {
              assertThat(effects.get(k)).as("effects of " + k).hasValue(1);
              assertThat(jdbc.idempotencyStore().status(k)).as(k).contains(Claim.Status.DONE);
            }
          });
    }
  }

  /** Workers go through every key (each in its own seeded order) until DONE; cut at a quarter. */
  private static void race(IdempotencyStore store, List<String> keys,
      Map<String, AtomicInteger> effects, int workers, Runnable atQuarter) throws Exception {
    AtomicInteger progress = new AtomicInteger();
    java.util.concurrent.CountDownLatch quarter = new java.util.concurrent.CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        List<String> order = new ArrayList<>(keys);
        Collections.shuffle(order, new Random(w));
        futures.add(pool.submit(() -> {
          for (String key : order) {
            Await.until(Duration.ofSeconds(30), key + " DONE", () -> {
              Claim c = store.claim(key, LEASE);
              if (c.status() == Claim.Status.DONE) {
                return true;
              }
              if (!c.isClaimed()) {
                return false;
              }
              effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
              assertThat(store.complete(c)).as("completing " + key).isTrue();
              return true;
            });
            if (progress.incrementAndGet() == keys.size()) {
              quarter.countDown();
            }
          }
          return null;
        }));
      }
      assertThat(quarter.await(60, TimeUnit.SECONDS)).as("a quarter of the work done").isTrue();
      atQuarter.run();
      for (Future<?> f : futures) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}

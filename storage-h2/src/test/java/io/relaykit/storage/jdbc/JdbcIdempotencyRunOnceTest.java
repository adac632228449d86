package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.RunOnceResult;
import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** tryRunOnce: the dedupe row and the effect in one transaction, on H2 and PostgreSQL. */
class JdbcIdempotencyRunOnceTest {
  private final FakeClock clock = new FakeClock();

  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.shared(TestDatabase.Kind.H2_MEMORY),
        TestDatabase.shared(TestDatabase.Kind.POSTGRESQL));
  }

  private static String effects(JdbcStorage storage) throws SQLException {
    String table = storage.tablePrefix() + "effects";
    try (Connection c = storage.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + table + " (id VARCHAR(50) PRIMARY KEY)");
    }
    return table;
  }

  private static void insert(Connection tx, String table, String id) throws SQLException {
    try (Statement s = tx.createStatement()) {
      s.execute("INSERT INTO " + table + " VALUES ('" + id + "')");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a duplicate key skips the work and the outer transaction survives to commit")
  void duplicateKeepsTransaction(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    String effects = effects(storage);
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "order-1:sms", c -> insert(c, effects, "sms-1")))
          .isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      insert(tx, effects, "before");
      assertThat(store.tryRunOnce(tx, "order-1:sms", c -> insert(c, effects, "sms-again")))
          .isEqualTo(RunOnceResult.ALREADY_DONE);
      insert(tx, effects, "after");
      tx.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + effects)).isEqualTo(3);
    assertThat(db.count("SELECT COUNT(*) FROM " + effects + " WHERE id = 'sms-again'")).isZero();
    assertThat(store.status("order-1:sms")).contains(Claim.Status.DONE);
    assertThat(store.claim("order-1:sms", Duration.ofSeconds(5)).status())
        .isEqualTo(Claim.Status.DONE);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a key held by a live claim answers IN_PROGRESS, not done; once the holder releases"
      + " it, the work runs")
  void inProgressIsNotDone(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    String effects = effects(storage);
    Claim holder = store.claim("order-3:sms", Duration.ofMinutes(1));
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "order-3:sms", c -> insert(c, effects, "early")))
          .isEqualTo(RunOnceResult.IN_PROGRESS);
      tx.commit();
    }
    assertThat(store.release(holder)).isTrue();
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "order-3:sms", c -> insert(c, effects, "late")))
          .isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + effects + " WHERE id = 'late'")).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + effects)).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("the deprecated boolean runOnce still answers whether the work ran")
  @SuppressWarnings("deprecation")
  void deprecatedBooleanForm(TestDatabase db) throws SQLException {
    JdbcIdempotencyStore store = db.storage(clock).idempotencyStore();
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.runOnce(tx, "order-4:sms", c -> { })).isTrue();
      assertThat(store.runOnce(tx, "order-4:sms", c -> { })).isFalse();
      tx.commit();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("work that fails rolls back with the key: a retry runs it")
  void rollbackForgetsKey(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    String effects = effects(storage);
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThatThrownBy(() -> store.tryRunOnce(tx, "k", c -> {
        insert(c, effects, "half");
        throw new SQLException("downstream failed");
      })).hasMessage("downstream failed");
      tx.rollback();
    }
    assertThat(store.status("k")).isEmpty();
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "k", c -> insert(c, effects, "whole")))
          .isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + effects)).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("of 8 concurrent transactions running one key, exactly one effect commits")
  void concurrentRunOnce(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    String effects = effects(storage);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Boolean>> results = new ArrayList<>();
    try {
      for (int i = 0; i < 8; i++) {
        String id = "effect-" + i;
        results.add(pool.submit(() -> {
          start.await();
          try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            boolean ran = store.tryRunOnce(tx, "payment-7", c -> insert(c, effects, id)).ran();
            tx.commit();
            return ran;
          }
        }));
      }
      start.countDown();
      int ran = 0;
      for (Future<Boolean> f : results) {
        ran += f.get(60, TimeUnit.SECONDS) ? 1 : 0;
      }
      assertThat(ran).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + effects)).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a DONE key past its retention can run again; purgeExpired deletes it")
  void retention(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(TestDatabase.newPrefix(), Duration.ofHours(1), clock);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "k", c -> { })).isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
    assertThat(store.purgeExpired()).isZero();
    clock.advance(Duration.ofHours(1));
    assertThat(store.status("k")).isEmpty();
    assertThat(store.purgeExpired()).isEqualTo(1);
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, "k", c -> { })).isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("blank or oversize keys, a missing connection or work are refused by name")
  void badInput(TestDatabase db) throws SQLException {
    JdbcIdempotencyStore store = db.storage(clock).idempotencyStore();
    try (Connection tx = db.connection()) {
      assertThatThrownBy(() -> store.tryRunOnce(tx, " ", c -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      assertThatThrownBy(() -> store.tryRunOnce(tx, null, c -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
      assertThatThrownBy(() -> store.tryRunOnce(tx, "x".repeat(513), c -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("512");
      assertThatThrownBy(() -> store.tryRunOnce(tx, "k", null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("work");
      assertThatThrownBy(() -> store.tryRunOnce(null, "k", c -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tx");
    }
  }
}

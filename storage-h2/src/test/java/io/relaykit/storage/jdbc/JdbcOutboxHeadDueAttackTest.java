package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Key heads that carry their key's due time (schema version 10) under hostile interleavings: a
 * key due again after a retry is claimed in sequence order beside fresh keys, and a due row is
 * never hidden behind a head whose due time lies in the future. On H2 (memory, file) and
 * PostgreSQL, time driven by a fake database clock.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxHeadDueAttackTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private final List<TestDatabase> databases = new ArrayList<>();

  @BeforeAll
  void open(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void close() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.event").key(key).payload(body).build();
  }

  private static long append(JdbcStorage storage, JdbcOutboxStore outbox, Message m) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      long seq = outbox.append(c, "orders", m);
      c.commit();
      return seq;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a key due again after a retry is claimed oldest first beside more fresh keys than"
      + " the batch, not starved behind them")
  void dueRetryIsNotStarvedByFreshKeys(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
    long retried = append(storage, outbox, message("k-retry", "retried"));
    assertThat(outbox.claim("r0", 1, LEASE, clock.instant())).extracting(OutboxRecord::sequence)
        .containsExactly(retried);
    assertThat(outbox.reschedule("r0", retried, 1, clock.instant(),
        clock.instant().plus(Duration.ofMinutes(1)), "down")).isTrue();
    for (int i = 0; i < 6; i++) {
      append(storage, outbox, message("k-fresh-" + i, "fresh-" + i));
    }
    clock.advance(Duration.ofMinutes(2));
    List<OutboxRecord> got = outbox.claim("r1", 2, LEASE, clock.instant());
    assertThat(got).extracting(OutboxRecord::sequence).as("oldest first").contains(retried);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("database clock stepped back while markSent skips a head an append holds: the key's"
      + " next row, due now, is claimed after the next purge at the latest, not after the step")
  void clockStepBackWithSkippedHeadIsRepairedByPurge(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
    long first = append(storage, outbox, message("k", "first"));
    assertThat(outbox.claim("r0", 1, LEASE, clock.instant())).hasSize(1);
    assertThat(outbox.reschedule("r0", first, 1, clock.instant(),
        clock.instant().plus(Duration.ofHours(1)), "down")).isTrue();
    clock.advance(Duration.ofHours(1).plusSeconds(1));
    assertThat(outbox.claim("r1", 1, LEASE, clock.instant())).extracting(OutboxRecord::sequence)
        .containsExactly(first);
    long second;
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      second = outbox.append(c, "orders", message("k", "second"));
      // The database clock steps back two hours while the append holds the key's head.
      clock.stepWall(Duration.ofHours(-2));
      assertThat(outbox.markSent("r1", List.of(first), clock.instant())).isEqualTo(1);
      c.commit();
    }
    // The head kept the sent row's due time, now two hours ahead of the stepped-back clock: the
    // relay's purge (repair of stale heads) moves it on; before, the row waited for the step.
    outbox.purgeSentOlderThan(Duration.ofDays(7), 100, clock.instant());
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).extracting(OutboxRecord::sequence)
        .containsExactly(second);
  }

  /** Seeds kept: each one a fixed case (none has failed since the claim fix; add any that does). */
  Stream<org.junit.jupiter.params.provider.Arguments> seeded() {
    return databases.stream().filter(db -> db.kind != TestDatabase.Kind.H2_FILE)
        .flatMap(db -> Stream.of(1L, 7L, 42L).map(
            seed -> org.junit.jupiter.params.provider.Arguments.of(db, seed)));
  }

  @ParameterizedTest(name = "{0} seed {1}")
  @MethodSource("seeded")
  @DisplayName("random appends (some holding the head while rows of the key are sent, retried or"
      + " removed, then committed or rolled back), claims, reschedules and time: every key's"
      + " lowest unsent row is claimable exactly when it is due, never a later row of the key")
  void randomOperationsKeepEveryDueHeadClaimable(TestDatabase db, long seed) throws SQLException {
    java.util.Random random = new java.util.Random(seed);
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
    // Per key: unsent rows, seq -> due (epoch nanos of the fake database clock; 0 = due now).
    java.util.Map<String, java.util.TreeMap<Long, Long>> model = new java.util.TreeMap<>();
    String[] keys = {"a", "b", "c", "d"};
    for (String k : keys) {
      model.put(k, new java.util.TreeMap<>());
    }
    for (int step = 0; step < 120; step++) {
      int op = random.nextInt(10);
      String key = keys[random.nextInt(keys.length)];
      if (op < 3) {
        model.get(key).put(append(storage, outbox, message(key, "s" + step)), 0L);
      } else if (op < 5) {
        // An append holds the key's head while a relay works on rows of the key.
        try (Connection c = storage.dataSource().getConnection()) {
          c.setAutoCommit(false);
          long seq = outbox.append(c, "orders", message(key, "held" + step));
          act(outbox, random, model, 1 + random.nextInt(3));
          if (random.nextBoolean()) {
            c.commit();
            model.get(key).put(seq, 0L);
          } else {
            c.rollback();
          }
        }
      } else if (op < 8) {
        act(outbox, random, model, 1 + random.nextInt(3));
      } else {
        clock.advance(Duration.ofSeconds(random.nextInt(90)));
      }
      // Invariant: a claim finds exactly each key's lowest unsent row that is due.
      long now = clock.instant().getEpochSecond() * 1_000_000_000L + clock.instant().getNano();
      java.util.Set<Long> expected = new java.util.TreeSet<>();
      for (java.util.TreeMap<Long, Long> rows : model.values()) {
        if (!rows.isEmpty() && rows.firstEntry().getValue() <= now) {
          expected.add(rows.firstKey());
        }
      }
      List<OutboxRecord> got = outbox.claim("check", 100, 1, LEASE, clock.instant());
      outbox.release("check", got.stream().map(OutboxRecord::sequence).toList());
      assertThat(got).extracting(OutboxRecord::sequence)
          .as("seed %d step %d op %d: model %s", seed, step, op, model)
          .containsExactlyInAnyOrderElementsOf(expected);
    }
  }

  /** One relay's claim and, per claimed row, send, retry later, remove or give back. */
  private void act(JdbcOutboxStore outbox, java.util.Random random,
      java.util.Map<String, java.util.TreeMap<Long, Long>> model, int maxRun) {
    List<OutboxRecord> got = outbox.claim("r", 1 + random.nextInt(3), maxRun, LEASE,
        clock.instant());
    for (OutboxRecord r : got) {
      java.util.TreeMap<Long, Long> rows = model.get(r.message().key().orElseThrow());
      assertThat(rows).as("claimed row %d is unsent in the model", r.sequence())
          .containsKey(r.sequence());
      assertThat(rows.headMap(r.sequence()).keySet())
          .as("rows of the key below claimed %d are leased in this claim too", r.sequence())
          .allMatch(s -> got.stream().anyMatch(g -> g.sequence() == s));
      switch (random.nextInt(4)) {
        case 0 -> {
          assertThat(outbox.markSent("r", List.of(r.sequence()), clock.instant())).isEqualTo(1);
          rows.remove(r.sequence());
        }
        case 1 -> {
          Duration delay = Duration.ofSeconds(random.nextInt(120));
          assertThat(outbox.reschedule("r", r.sequence(), r.attempts() + 1, clock.instant(),
              clock.instant().plus(delay), "down")).isTrue();
          java.time.Instant due = clock.instant().plus(delay);
          rows.put(r.sequence(), due.getEpochSecond() * 1_000_000_000L + due.getNano());
        }
        case 2 -> {
          assertThat(outbox.markDead("r", r.sequence())).isTrue();
          rows.remove(r.sequence());
        }
        default -> outbox.release("r", List.of(r.sequence()));
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("two instances migrating a populated version-9 schema with backed-off keys at once:"
      + " both open, each head gets its row's due time, claims find every due key and no other")
  void twoInstancesMigrateBackedOffKeysAtOnce(TestDatabase db) throws Exception {
    String prefix = TestDatabase.newPrefix();
    Tables tables = new Tables(prefix);
    long nowNanos = Instants.toNanos("now", clock.instant());
    long hourAhead = nowNanos + Duration.ofHours(1).toNanos();
    int keys = 40;
    try (Connection c = db.connection(); java.sql.Statement s = c.createStatement()) {
      for (int version : Schema.versions()) {
        if (version < 10) {
          for (String sql : Schema.statements(db.dialect(), version, tables)) {
            s.execute(sql);
          }
        }
      }
      try (java.sql.PreparedStatement ps = c.prepareStatement("INSERT INTO " + tables.outbox
          + " (destination, message_id, msg_key, headers, payload, created_at, order_dest, state,"
          + " ready_at, attempts) VALUES ('orders', ?, ?, ?, ?, 0, '', 0, ?, ?)")) {
        for (int i = 0; i < keys; i++) {
          // Even keys: the lowest row backed off an hour (a second row behind it, due now);
          // odd keys: one row, backed off into the past (due).
          for (int row = 0; row < (i % 2 == 0 ? 2 : 1); row++) {
            Message m = message("k" + i, "p" + i + "-" + row);
            ps.setString(1, m.id());
            ps.setString(2, "k" + i);
            ps.setString(3, Envelopes.encode(m));
            ps.setBytes(4, m.payload());
            ps.setLong(5, row > 0 ? 0 : i % 2 == 0 ? hourAhead : nowNanos - 1);
            ps.setInt(6, row > 0 ? 0 : 1);
            ps.executeUpdate();
          }
        }
      }
      s.execute("INSERT INTO " + tables.outboxHead + " (msg_key, order_dest, head_seq)"
          + " SELECT msg_key, order_dest, MIN(seq) FROM " + tables.outbox
          + " GROUP BY msg_key, order_dest");
    }
    java.util.concurrent.ExecutorService threads =
        java.util.concurrent.Executors.newFixedThreadPool(2);
    try {
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
      List<java.util.concurrent.Future<JdbcStorage>> opens = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        opens.add(threads.submit(() -> {
          start.await(10, java.util.concurrent.TimeUnit.SECONDS);
          return db.storage(prefix, Duration.ofDays(7), clock);
        }));
      }
      JdbcStorage storage = null;
      for (java.util.concurrent.Future<JdbcStorage> f : opens) {
        storage = f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
      assertThat(db.count("SELECT COUNT(*) FROM " + tables.outboxHead + " WHERE head_due = "
          + hourAhead)).isEqualTo(keys / 2);
      JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
      List<OutboxRecord> first = outbox.claim("r", 100, LEASE, clock.instant());
      assertThat(first)
          .extracting(r -> r.message().key().orElseThrow()).as("the odd keys, due")
          .containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.range(0, keys)
              .filter(i -> i % 2 == 1).mapToObj(i -> "k" + i).toList());
      assertThat(outbox.markSent("r", first.stream().map(OutboxRecord::sequence).toList(),
          clock.instant())).isEqualTo(keys / 2);
      clock.advance(Duration.ofHours(1).plusSeconds(1));
      List<OutboxRecord> due = outbox.claim("r2", 100, LEASE, clock.instant());
      assertThat(due).extracting(r -> r.message().payloadUtf8()).as("each even key's lowest row")
          .containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.range(0, keys)
              .filter(i -> i % 2 == 0).mapToObj(i -> "p" + i + "-0").toList());
    } finally {
      threads.shutdownNow();
    }
  }
}

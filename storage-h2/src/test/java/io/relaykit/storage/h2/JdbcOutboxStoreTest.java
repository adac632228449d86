package io.relaykit.storage.h2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.queue.Priority;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The JDBC outbox's own guarantees, on H2 (memory and file) and PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxStoreTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

  private final List<TestDatabase> databases = new ArrayList<>();
  private FakeClock clock;

  @BeforeEach
  void newClock() {
    clock = new FakeClock();
  }

  @BeforeAll
  void openDatabases(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void closeDatabases() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.placed").key(key).payload(body)
        .createdAt(FakeClock.EPOCH).build();
  }

  private static long append(JdbcStorage storage, String destination, Message m) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      long seq = storage.outboxStore().append(c, destination, m);
      c.commit();
      return seq;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("append commits and rolls back with the caller's business transaction")
  void appendFollowsCallerTransaction(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    String orders = storage.tablePrefix() + "orders";
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + orders + " (id VARCHAR(20) PRIMARY KEY)");
    }
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      c.createStatement().execute("INSERT INTO " + orders + " VALUES ('o-1')");
      outbox.append(c, "orders", message("o-1", "rolled back"));
      c.rollback();
      c.createStatement().execute("INSERT INTO " + orders + " VALUES ('o-2')");
      outbox.append(c, "orders", message("o-2", "committed"));
      c.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + orders)).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox")).isEqualTo(1);
    List<OutboxRecord> claimed = outbox.claim("relay-a", 10, LEASE, clock.instant());
    assertThat(claimed).extracting(r -> r.message().payloadUtf8()).containsExactly("committed");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a claimed message round-trips every envelope field")
  void envelopeRoundTrips(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    Message m = Message.builder().id("m-1").type("order.placed").schemaVersion(3).key("k:1")
        .payload(new byte[] {0, 1, 2, (byte) 255}).header("tenant", "a:b:7:").header("x", "")
        .createdAt(Instant.parse("2026-01-01T00:00:00.123456789Z"))
        .expiresAt(Instant.parse("2026-02-01T00:00:00Z")).priority(Priority.CRITICAL)
        .traceId("0af7651916cd43dd8448eb211c80319c").build();
    long seq = append(storage, "orders", m);
    List<OutboxRecord> claimed = storage.outboxStore().claim("r", 5, LEASE, clock.instant());
    assertThat(claimed).hasSize(1);
    OutboxRecord r = claimed.get(0);
    assertThat(r.message()).isEqualTo(m);
    assertThat(r.sequence()).isEqualTo(seq);
    assertThat(r.destination()).isEqualTo("orders");
    assertThat(r.attempts()).isZero();
    assertThat(r.firstFailureAt()).isNull();
    assertThat(r.leaseOwner()).isEqualTo("r");
    assertThat(r.leaseExpiresAt()).isEqualTo(clock.instant().plus(LEASE));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a key's next message is claimable only after the previous one is sent")
  void perKeyHead(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    append(storage, "d", message("a", "a1"));
    append(storage, "d", message("a", "a2"));
    append(storage, "d", message("b", "b1"));
    append(storage, "d", message(null, "n1"));
    append(storage, "d", message(null, "n2"));
    List<OutboxRecord> first = outbox.claim("r1", 10, LEASE, clock.instant());
    assertThat(first).extracting(r -> r.message().payloadUtf8())
        .containsExactly("a1", "b1", "n1", "n2");
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).isEmpty();
    assertThat(outbox.markSent("r1", List.of(first.get(0).sequence()), clock.instant()))
        .isEqualTo(1);
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant()))
        .extracting(r -> r.message().payloadUtf8()).containsExactly("a2");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a rescheduled head parks its key until its time while other keys flow")
  void rescheduleParksKey(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long a1 = append(storage, "d", message("a", "a1"));
    append(storage, "d", message("a", "a2"));
    append(storage, "d", message("b", "b1"));
    outbox.claim("r", 1, LEASE, clock.instant());
    Instant failedAt = clock.instant();
    assertThat(outbox.reschedule("r", a1, 1, failedAt, failedAt.plusSeconds(10), "boom"))
        .isTrue();
    assertThat(outbox.claim("r", 10, LEASE, clock.instant()))
        .extracting(r -> r.message().payloadUtf8()).containsExactly("b1");
    clock.advance(Duration.ofSeconds(10));
    List<OutboxRecord> retry = outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(retry).extracting(r -> r.message().payloadUtf8()).containsExactly("a1");
    assertThat(retry.get(0).attempts()).isEqualTo(1);
    assertThat(retry.get(0).firstFailureAt()).isEqualTo(failedAt);
    // A later failure keeps the first failure time.
    assertThat(outbox.reschedule("r", a1, 2, clock.instant(), clock.instant(), "again")).isTrue();
    assertThat(outbox.claim("r", 10, LEASE, clock.instant()).get(0).firstFailureAt())
        .isEqualTo(failedAt);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("an expired lease is taken over, and the old owner can no longer mark the row")
  void leaseTakeover(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long seq = append(storage, "d", message("a", "a1"));
    assertThat(outbox.claim("crashed", 10, LEASE, clock.instant())).hasSize(1);
    clock.advance(LEASE.minusMillis(1));
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).isEmpty();
    clock.advance(Duration.ofMillis(1));
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).hasSize(1);
    assertThat(outbox.markSent("crashed", List.of(seq), clock.instant())).isZero();
    assertThat(outbox.reschedule("crashed", seq, 1, clock.instant(), clock.instant(), "x"))
        .isFalse();
    assertThat(outbox.markDead("crashed", seq)).isFalse();
    assertThat(outbox.markSent("r2", List.of(seq), clock.instant())).isEqualTo(1);
    assertThat(outbox.stats(clock.instant())).isEqualTo(new OutboxStats(0, Duration.ZERO, 1));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("markDead removes the row; purgeSent removes only rows sent before the cutoff")
  void deadAndPurge(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long dead = append(storage, "d", message("a", "dead"));
    long early = append(storage, "d", message("b", "early"));
    long late = append(storage, "d", message("c", "late"));
    outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(outbox.markDead("r", dead)).isTrue();
    outbox.markSent("r", List.of(early), clock.instant());
    clock.advance(Duration.ofHours(1));
    outbox.markSent("r", List.of(late), clock.instant());
    assertThat(outbox.stats(clock.instant()).sent()).isEqualTo(2);
    assertThat(outbox.purgeSent(clock.instant())).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox"))
        .isEqualTo(1);
    assertThat(db.count("SELECT seq FROM " + storage.tablePrefix() + "outbox")).isEqualTo(late);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("stats count unsent rows and the age of the oldest message")
  void stats(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    append(storage, "d", message("a", "1"));
    append(storage, "d", message("a", "2"));
    clock.advance(Duration.ofMinutes(3));
    assertThat(storage.outboxStore().stats(clock.instant()))
        .isEqualTo(new OutboxStats(2, Duration.ofMinutes(3), 0));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("concurrent claims never hand out the same row twice (SKIP LOCKED)")
  void concurrentClaimsAreDisjoint(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    int rows = 300;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < rows; i++) {
        batch.add(message(i % 3 == 0 ? null : "k" + i, "m" + i));
      }
      outbox.appendAll(c, "d", batch);
      c.commit();
    }
    int threads = 4;
    CyclicBarrier start = new CyclicBarrier(threads);
    Set<Long> seen = ConcurrentHashMap.newKeySet();
    List<Long> duplicates = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String owner = "relay-" + t;
        futures.add(pool.submit(() -> {
          start.await();
          List<OutboxRecord> got;
          while (!(got = outbox.claim(owner, 7, LEASE, clock.instant())).isEmpty()) {
            for (OutboxRecord r : got) {
              if (!seen.add(r.sequence())) {
                synchronized (duplicates) {
                  duplicates.add(r.sequence());
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(duplicates).isEmpty();
    assertThat(seen).hasSize(rows);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix()
        + "outbox WHERE lease_owner IS NOT NULL")).isEqualTo(rows);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a payload over the column limit is refused before anything is written")
  void oversizePayload(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    Message big = Message.builder().type("t").payload(new byte[JdbcOutboxStore.MAX_PAYLOAD_BYTES + 1])
        .build();
    Message fits = Message.builder().type("t").payload(new byte[JdbcOutboxStore.MAX_PAYLOAD_BYTES])
        .build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      storage.outboxStore().append(c, "d", fits);
      assertThatThrownBy(() -> storage.outboxStore().append(c, "d", big))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("payload").hasMessageContaining("1048577")
          .hasMessageContaining("nothing was written");
      assertThatThrownBy(() -> storage.outboxStore().appendAll(c, "d", List.of(fits, big)))
          .isInstanceOf(IllegalArgumentException.class);
      c.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox")).isEqualTo(1);
    assertThat(storage.outboxStore().claim("r", 5, LEASE, clock.instant()).get(0).message()
        .payloadSize()).isEqualTo(JdbcOutboxStore.MAX_PAYLOAD_BYTES);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("blank destinations, owners and a missing connection are refused by name")
  void badArguments(TestDatabase db) throws SQLException {
    JdbcOutboxStore outbox = db.storage(clock).outboxStore();
    Message m = message("k", "x");
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> outbox.append(c, " ", m)).hasMessageContaining("destination");
      assertThatThrownBy(() -> outbox.append(c, null, m)).hasMessageContaining("destination");
      assertThatThrownBy(() -> outbox.append(c, "d", null)).hasMessageContaining("message");
      assertThatThrownBy(() -> outbox.append(null, "d", m)).hasMessageContaining("tx");
    }
    assertThatThrownBy(() -> outbox.claim("", 1, LEASE, clock.instant()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
    assertThatThrownBy(() -> outbox.claim("r", 0, LEASE, clock.instant()))
        .hasMessageContaining("max");
    assertThatThrownBy(() -> outbox.claim("r", 1, Duration.ZERO, clock.instant()))
        .hasMessageContaining("lease");
  }
}

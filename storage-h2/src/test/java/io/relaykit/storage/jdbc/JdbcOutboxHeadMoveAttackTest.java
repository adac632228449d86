package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * PostgreSQL's markSent commits its UPDATE on its own and moves the keys' heads in a second
 * transaction. Here that second transaction fails (its commit refused) or its reply is lost, and a
 * stale relay marks rows another relay leased since: per-key order must hold (a key's next row is
 * claimable once, and only once, its previous row is sent), no key stalls until a purge, and a
 * fenced mark changes nothing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxHeadMoveAttackTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private TestDatabase db;

  @BeforeAll
  void open(@TempDir Path tempDir) {
    db = TestDatabase.open(TestDatabase.Kind.POSTGRESQL, tempDir);
  }

  @AfterAll
  void close() {
    db.close();
  }

  private record Setup(CommitHookDataSource hooks, JdbcOutboxStore outbox, String prefix) {}

  private Setup setup() {
    String prefix = TestDatabase.newPrefix();
    CommitHookDataSource hooks = new CommitHookDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(hooks, Dialect.POSTGRESQL, prefix, Duration.ofDays(7),
        clock, DatabaseClock.of(clock), LifecycleListener.noop(), true);
    return new Setup(hooks, storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY),
        prefix);
  }

  private long append(Setup s, String key, String body) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      long seq = s.outbox.append(c, "orders",
          Message.builder().type("order.event").key(key).payload(body).build());
      c.commit();
      return seq;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  private long head(Setup s, String key) {
    return db.count("SELECT COALESCE(head_seq, 0) FROM " + s.prefix + "outbox_head"
        + " WHERE msg_key = '" + key + "'");
  }

  private static List<Long> seqs(List<OutboxRecord> rows) {
    return rows.stream().map(OutboxRecord::sequence).toList();
  }

  @Test
  @DisplayName("the head-move transaction fails after the mark committed: markSent still counts"
      + " the row, the key's next row (and never a later one) is claimable at once, and the next"
      + " mark of the key moves its head on")
  void failedHeadMoveKeepsOrderWithoutStall() {
    Setup s = setup();
    long r1 = append(s, "k", "1");
    long r2 = append(s, "k", "2");
    long r3 = append(s, "k", "3");
    assertThat(seqs(s.outbox.claim("a", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    s.hooks.onNextCommit(commit -> {
      throw new SQLException("the head move's commit was refused (test)", "08006");
    });
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isEqualTo(1);
    assertThat(head(s, "k")).as("the head is stale: it still names the sent row").isEqualTo(r1);
    // The repeat finds nothing (the rows are sent) and says so.
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isZero();
    assertThat(seqs(s.outbox.claim("b", 10, 1, LEASE, clock.instant()))).containsExactly(r2);
    assertThat(seqs(s.outbox.claim("c", 10, 1, LEASE, clock.instant())))
        .as("r3 waits for r2").isEmpty();
    assertThat(s.outbox.markSent("b", List.of(r2), clock.instant())).isEqualTo(1);
    assertThat(head(s, "k")).isEqualTo(r3);
    assertThat(seqs(s.outbox.claim("c", 10, 1, LEASE, clock.instant()))).containsExactly(r3);
  }

  @Test
  @DisplayName("the head move's reply is lost (it committed): markSent counts the row and the"
      + " head names the key's next row")
  void lostHeadMoveReply() {
    Setup s = setup();
    long r1 = append(s, "k", "1");
    long r2 = append(s, "k", "2");
    assertThat(seqs(s.outbox.claim("a", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    s.hooks.onNextCommit(commit -> {
      commit.run();
      throw new SQLException("the reply to the head move's commit was lost (test)", "08006");
    });
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isEqualTo(1);
    assertThat(head(s, "k")).isEqualTo(r2);
    assertThat(seqs(s.outbox.claim("b", 10, 1, LEASE, clock.instant()))).containsExactly(r2);
  }

  @Test
  @DisplayName("a failed head move on a key with no unsent row left: a later append of the key is"
      + " claimed at once, and the purge repairs the head (it never deletes a head with rows)")
  void failedHeadMoveThenAppendThenPurge() {
    Setup s = setup();
    long r1 = append(s, "k", "1");
    assertThat(seqs(s.outbox.claim("a", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    s.hooks.onNextCommit(commit -> {
      throw new SQLException("the head move's commit was refused (test)", "08006");
    });
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isEqualTo(1);
    long r2 = append(s, "k", "2");
    long r3 = append(s, "k", "3");
    s.outbox.purgeSentOlderThan(Duration.ZERO, 100, clock.instant().plusSeconds(1));
    assertThat(head(s, "k")).as("repaired").isEqualTo(r2);
    assertThat(seqs(s.outbox.claim("b", 10, 1, LEASE, clock.instant()))).containsExactly(r2);
    assertThat(s.outbox.markSent("b", List.of(r2), clock.instant())).isEqualTo(1);
    assertThat(seqs(s.outbox.claim("b", 10, 1, LEASE, clock.instant()))).containsExactly(r3);
  }

  @Test
  @DisplayName("a stale relay (lease expired, another relay claimed the row) marks 0 rows and moves"
      + " no head; the new owner's mark still counts and moves the head")
  void staleRelayIsFencedAndMovesNoHead() {
    Setup s = setup();
    long r1 = append(s, "k", "1");
    long r2 = append(s, "k", "2");
    assertThat(seqs(s.outbox.claim("a", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    clock.advance(LEASE.plusSeconds(1));
    assertThat(seqs(s.outbox.claim("b", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isZero();
    assertThat(head(s, "k")).isEqualTo(r1);
    assertThat(seqs(s.outbox.claim("c", 10, 1, LEASE, clock.instant())))
        .as("r1 is still b's, r2 waits").isEmpty();
    assertThat(s.outbox.markSent("b", List.of(r1), clock.instant())).isEqualTo(1);
    assertThat(head(s, "k")).isEqualTo(r2);
  }

  @Test
  @DisplayName("after a failed head move, a claim with key runs leases the key's rows from the"
      + " next unsent one on, in order, and the unsent count is the rows not sent")
  void failedHeadMoveThenKeyRun() {
    Setup s = setup();
    long r1 = append(s, "k", "1");
    long r2 = append(s, "k", "2");
    long r3 = append(s, "k", "3");
    assertThat(seqs(s.outbox.claim("a", 10, 1, LEASE, clock.instant()))).containsExactly(r1);
    s.hooks.onNextCommit(commit -> {
      throw new SQLException("the head move's commit was refused (test)", "08006");
    });
    assertThat(s.outbox.markSent("a", List.of(r1), clock.instant())).isEqualTo(1);
    assertThat(s.outbox.stats(clock.instant()).unsent()).isEqualTo(2);
    assertThat(seqs(s.outbox.claim("b", 10, 10, LEASE, clock.instant())))
        .containsExactly(r2, r3);
    assertThat(s.outbox.markSent("b", List.of(r2, r3), clock.instant())).isEqualTo(2);
    assertThat(head(s, "k")).as("no unsent row left").isZero();
    assertThat(s.outbox.stats(clock.instant()).unsent()).isZero();
  }

  @Test
  @DisplayName("two relays at once, keyed rows, every other head move refused: no claim ever"
      + " hands out a row while a lower row of its key (outside the same claim) is unsent, and"
      + " every row is marked once")
  void concurrentRelaysWithFailingHeadMovesKeepKeyOrder() throws Exception {
    Setup s = setup();
    String[] keys = {"a", "b", "c", "d"};
    java.util.Random random = new java.util.Random(38);
    for (int i = 0; i < 60; i++) {
      append(s, keys[random.nextInt(keys.length)], "p" + i);
    }
    AtomicInteger marked = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    java.util.concurrent.ConcurrentLinkedQueue<String> violations =
        new java.util.concurrent.ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (String owner : List.of("r1", "r2")) {
        done.add(pool.submit(() -> {
          long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
          while (marked.get() < 60 && System.nanoTime() < deadline) {
            List<OutboxRecord> got = s.outbox.claim(owner, 5, 3, LEASE, clock.instant());
            java.util.Set<Long> batch = new java.util.HashSet<>(seqs(got));
            for (OutboxRecord r : got) {
              String in = batch.stream().map(String::valueOf)
                  .collect(java.util.stream.Collectors.joining(","));
              long earlier = db.count("SELECT COUNT(*) FROM " + s.prefix + "outbox"
                  + " WHERE msg_key = '" + r.message().key().orElseThrow() + "' AND state = 0"
                  + " AND seq < " + r.sequence() + " AND seq NOT IN (" + in + ")");
              if (earlier != 0) {
                violations.add(owner + " claimed " + r.sequence() + " of key "
                    + r.message().key().orElseThrow() + " with " + earlier + " lower rows unsent");
              }
            }
            if (!got.isEmpty()) {
              if (refused.incrementAndGet() % 2 == 0) {
                s.hooks.onNextCommit(commit -> {
                  throw new SQLException("head move refused (test)", "08006");
                });
              }
              marked.addAndGet(s.outbox.markSent(owner, seqs(got), clock.instant()));
            }
          }
          return null;
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(violations).isEmpty();
    assertThat(marked.get()).isEqualTo(60);
    assertThat(s.outbox.stats(clock.instant()).unsent()).isZero();
  }
}

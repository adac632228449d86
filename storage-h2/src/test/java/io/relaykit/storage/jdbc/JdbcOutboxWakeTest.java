package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Relays woken when rows commit: in this JVM (auto-commit appends, {@code committed()}) on H2 and
 * PostgreSQL, and across processes through LISTEN/NOTIFY on PostgreSQL, where a second storage on
 * a pool of its own stands in for another JVM. Every relay polls every 30 s, so a row published
 * within the deadline was woken, not polled.
 */
@DisplayName("outbox wakes")
class JdbcOutboxWakeTest {
  private static final Duration LONG_POLL = Duration.ofSeconds(30);
  private static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final String DEST = "orders";

  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closing(T c) {
    closing.add(c);
    return c;
  }

  private static Message message(String key, String body) {
    return Message.builder().type("t").key(key).payload(body).build();
  }

  private OutboxRelay relay(JdbcStorage storage, RecordingPublisher publisher,
      Duration pollInterval) {
    OutboxRelay relay = closing(OutboxRelay.builder(storage.outboxStore(), publisher,
        new InMemoryDeadLetterStore()).pollInterval(pollInterval).build());
    relay.start();
    return relay;
  }

  /** A storage on a pool of its own, as another JVM would have. */
  private JdbcStorage separateStorage(TestDatabase db, String prefix) {
    HikariDataSource pool = closing(newPool(db));
    return closing(JdbcStorage.open(pool, db.dialect(), prefix, Duration.ofDays(7),
        InstantSource.system()));
  }

  private static HikariDataSource newPool(TestDatabase db) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(db.url);
    hc.setMaximumPoolSize(3);
    hc.setMinimumIdle(0);
    try (Connection c = db.connection()) {
      hc.setSchema(c.getSchema());
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
    return new HikariDataSource(hc);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE", "POSTGRESQL"})
  @DisplayName("an auto-commit append wakes an idle relay of the same storage (30 s poll)")
  void autoCommitAppendWakes(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = TestDatabase.shared(kind);
    JdbcStorage storage = closing(db.storage(TestDatabase.newPrefix(), Duration.ofDays(7),
        InstantSource.system())).outboxNotifications(false);
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = relay(storage, publisher, LONG_POLL);
    for (int i = 0; i < 3; i++) {
      try (Connection c = db.connection()) {
        storage.outboxStore().append(c, DEST, message(i % 2 == 0 ? "k" : null, "m" + i));
      }
      int expected = i + 1;
      Await.until(DEADLINE, "message " + i + " published",
          () -> publisher.confirmedCount() == expected);
    }
    assertThat(publisher.publishedPayloads()).containsExactly("m0", "m1", "m2");
    assertThat(relay.wokenClaims()).isGreaterThanOrEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE", "POSTGRESQL"})
  @DisplayName("after the caller's own commit, committed() wakes the relay; a rolled-back append"
      + " publishes nothing")
  void explicitCommitted(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = TestDatabase.shared(kind);
    JdbcStorage storage = closing(db.storage(TestDatabase.newPrefix(), Duration.ofDays(7),
        InstantSource.system())).outboxNotifications(false);
    RecordingPublisher publisher = new RecordingPublisher();
    relay(storage, publisher, LONG_POLL);
    var store = storage.outboxStore();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      store.append(c, DEST, message("k", "rolled-back"));
      c.rollback();
      store.append(c, DEST, message("k", "committed"));
      c.commit();
      c.setAutoCommit(true);
    }
    store.committed();
    Await.until(DEADLINE, "the committed row published", () -> publisher.confirmedCount() == 1);
    assertThat(publisher.publishedPayloads()).containsExactly("committed");
  }

  @Test
  @DisplayName("H2 has no NOTIFY: no listener runs and appends send nothing")
  void h2Polls() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_FILE);
    JdbcStorage storage = closing(db.storage(TestDatabase.newPrefix(), Duration.ofDays(7),
        InstantSource.system()));
    relay(storage, new RecordingPublisher(), LONG_POLL);
    assertThat(storage.wakes().notifier()).isNull();
    assertThat(storage.wakes().listener()).isNull();
  }

  @Test
  @DisplayName("channel names derive from the outbox table; names PostgreSQL would cut or that"
      + " need quoting are refused, naming the value")
  void channelNames() {
    assertThat(OutboxNotifier.channelOf("Relaykit_outbox")).isEqualTo("relaykit_outbox_wake");
    assertThatThrownBy(() -> OutboxNotifier.channelOf("a\"; DROP TABLE x; --"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("drop table x");
    assertThatThrownBy(() -> OutboxNotifier.channelOf("x".repeat(60)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("63");
    assertThatThrownBy(() -> OutboxNotifier.requireChannel("1abc"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  @DisplayName("NOTIFY is coalesced: at most one per interval on the injected monotonic clock,"
      + " given back when its append failed")
  void notifyCoalesced() {
    AtomicLong nanos = new AtomicLong(1_000_000_000L);
    OutboxNotifier n = new OutboxNotifier("c_wake", Duration.ofMillis(10), nanos::get);
    assertThat(n.claim()).isTrue();
    assertThat(n.claim()).isFalse();
    nanos.addAndGet(9_999_999);
    assertThat(n.claim()).isFalse();
    nanos.addAndGet(1);
    assertThat(n.claim()).isTrue();
    n.giveBack();
    assertThat(n.claim()).isTrue();
    assertThat(n.skipped()).isEqualTo(2);
    nanos.addAndGet(-60_000_000_000L); // a source that steps back starts a new interval at once
    assertThat(n.claim()).isTrue();
    OutboxNotifier every = new OutboxNotifier("c_wake", Duration.ZERO, nanos::get);
    assertThat(every.claim()).isTrue();
    assertThat(every.claim()).isTrue();
  }

  @Nested
  @DisplayName("across processes on PostgreSQL (LISTEN/NOTIFY)")
  class CrossProcess {
    private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    private final String prefix = TestDatabase.newPrefix();

    @Test
    @DisplayName("a row committed by another storage (its own pool and wakeup) wakes this JVM's"
        + " relay through NOTIFY; appends of one interval send one NOTIFY")
    void notifyWakesOtherProcess() throws Exception {
      JdbcStorage relaying = separateStorage(db, prefix);
      JdbcStorage appending = separateStorage(db, prefix).outboxWakeInterval(Duration.ofHours(1));
      RecordingPublisher publisher = new RecordingPublisher();
      relay(relaying, publisher, LONG_POLL);
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);
      try (Connection c = closing(newPool(db)).getConnection()) {
        c.setAutoCommit(false);
        appending.outboxStore().append(c, DEST, message("k", "a"));
        appending.outboxStore().append(c, DEST, message("k", "b"));
        c.commit();
      }
      Await.until(DEADLINE, "both rows published through NOTIFY",
          () -> publisher.confirmedCount() == 2);
      assertThat(appending.wakes().notifier().sent()).isEqualTo(1);
      assertThat(appending.wakes().notifier().skipped()).isEqualTo(1);
      assertThat(listener.notifications()).isEqualTo(1);
    }

    @Test
    @DisplayName("a NOTIFY whose transaction rolled back is never delivered")
    void rolledBackNotify() throws Exception {
      JdbcStorage relaying = separateStorage(db, prefix);
      JdbcStorage appending = separateStorage(db, prefix).outboxWakeInterval(Duration.ZERO);
      relay(relaying, new RecordingPublisher(), LONG_POLL);
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);
      try (Connection c = closing(newPool(db)).getConnection()) {
        c.setAutoCommit(false);
        appending.outboxStore().append(c, DEST, message("k", "gone"));
        c.rollback();
        appending.outboxStore().append(c, DEST, message("k", "kept"));
        c.commit();
      }
      Await.until(DEADLINE, "the committed NOTIFY arrives", () -> listener.notifications() >= 1);
      assertThat(appending.wakes().notifier().sent()).isEqualTo(2);
      assertThat(listener.notifications()).isEqualTo(1);
    }

    @Test
    @DisplayName("the listener's link cut and refused: the lost NOTIFY's row is published by the"
        + " poll; healed, the listener reconnects and NOTIFY wakes again")
    void lostNotifyAndReconnect() throws Exception {
      FaultProxy proxy = closing(FaultProxy.to("127.0.0.1", 5432));
      String via = db.url.replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
      JdbcStorage relaying = separateStorage(db, prefix)
          .outboxListenerConnections(() -> DriverManager.getConnection(via));
      JdbcStorage appending = separateStorage(db, prefix).outboxWakeInterval(Duration.ZERO);
      RecordingPublisher publisher = new RecordingPublisher();
      relay(relaying, publisher, Duration.ofSeconds(2));
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);

      proxy.refuseConnections();
      proxy.cutConnections();
      Await.until(DEADLINE, "the listener saw its link fail", () -> listener.failures() >= 1);
      try (Connection c = closing(newPool(db)).getConnection()) {
        appending.outboxStore().append(c, DEST, message(null, "while-cut"));
      }
      Await.until(DEADLINE, "the poll published the row", () -> publisher.confirmedCount() == 1);
      assertThat(listener.notifications()).isZero();

      proxy.heal();
      Await.until(Duration.ofSeconds(20), "the listener reconnected",
          () -> listener.listening() && listener.connects() >= 2);
      try (Connection c = closing(newPool(db)).getConnection()) {
        appending.outboxStore().append(c, DEST, message(null, "healed"));
      }
      Await.until(DEADLINE, "the NOTIFY arrives", () -> listener.notifications() >= 1);
      Await.until(DEADLINE, "the row published", () -> publisher.confirmedCount() == 2);
    }

    @Test
    @DisplayName("a silent link (blackholed, no reset): the NOTIFY is lost, the poll publishes the"
        + " row, and closing the storage still ends the listener's thread at once")
    void blackholedLink() throws Exception {
      FaultProxy proxy = closing(FaultProxy.to("127.0.0.1", 5432));
      String via = db.url.replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
      HikariDataSource pool = newPool(db);
      JdbcStorage relaying = JdbcStorage.open(pool, Dialect.POSTGRESQL, prefix,
          Duration.ofDays(7), InstantSource.system())
          .outboxListenerConnections(() -> DriverManager.getConnection(via));
      JdbcStorage appending = separateStorage(db, prefix).outboxWakeInterval(Duration.ZERO);
      RecordingPublisher publisher = new RecordingPublisher();
      OutboxRelay relay = OutboxRelay.builder(relaying.outboxStore(), publisher,
          new InMemoryDeadLetterStore()).pollInterval(Duration.ofSeconds(2)).build();
      relay.start();
      PostgresOutboxListener listener = relaying.wakes().listener();
      try {
        Await.until(DEADLINE, "the listener listens", listener::listening);
        proxy.blackhole();
        try (Connection c = closing(newPool(db)).getConnection()) {
          appending.outboxStore().append(c, DEST, message(null, "silent"));
        }
        Await.until(DEADLINE, "the poll published the row", () -> publisher.confirmedCount() == 1);
        assertThat(listener.notifications()).isZero();
      } finally {
        relay.close(Duration.ofSeconds(5));
        relaying.close();
        pool.close();
      }
      assertThat(listener.alive()).isFalse();
    }

    @Test
    @DisplayName("an interrupt of the listener's thread neither stops it nor loses its wakes")
    void interruptIgnored() throws Exception {
      JdbcStorage relaying = separateStorage(db, prefix);
      JdbcStorage appending = separateStorage(db, prefix).outboxWakeInterval(Duration.ZERO);
      RecordingPublisher publisher = new RecordingPublisher();
      relay(relaying, publisher, LONG_POLL);
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);
      Thread t = Thread.getAllStackTraces().keySet().stream()
          .filter(th -> th.getName().equals("relaykit-outbox-listener-"
              + relaying.wakes().channel()))
          .findFirst().orElseThrow();
      t.interrupt();
      Await.until(DEADLINE, "the interrupt was seen", () -> listener.interrupts() >= 1);
      try (Connection c = closing(newPool(db)).getConnection()) {
        c.setAutoCommit(false);
        appending.outboxStore().append(c, DEST, message(null, "after-interrupt"));
        c.commit();
      }
      Await.until(DEADLINE, "published through NOTIFY", () -> publisher.confirmedCount() == 1);
      assertThat(listener.alive()).isTrue();
    }

    @Test
    @DisplayName("idle, the listener sends nothing: no bytes to the server over four of its waits"
        + " (no periodic statement beyond the relay's poll)")
    void idleListenerSendsNothing() throws Exception {
      FaultProxy proxy = closing(FaultProxy.to("127.0.0.1", 5432));
      String via = db.url.replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
      JdbcStorage relaying = separateStorage(db, prefix)
          .outboxListenerConnections(() -> DriverManager.getConnection(via));
      relay(relaying, new RecordingPublisher(), LONG_POLL);
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);
      long waits = listener.waits();
      Await.until(DEADLINE, "one wait passed", () -> listener.waits() > waits);
      long bytes = proxy.bytesToServer();
      long from = listener.waits();
      Await.until(DEADLINE, "four more waits passed", () -> listener.waits() >= from + 4);
      assertThat(proxy.bytesToServer()).isEqualTo(bytes);
      assertThat(listener.connects()).isEqualTo(1);
    }

    @Test
    @DisplayName("the listener runs while a relay is started and stops when the last closes;"
        + " closing the storage ends its thread")
    void listenerLifecycle() throws Exception {
      JdbcStorage relaying = separateStorage(db, prefix);
      assertThat(relaying.wakes().listener()).isNull();
      OutboxRelay relay = relay(relaying, new RecordingPublisher(), LONG_POLL);
      PostgresOutboxListener listener = relaying.wakes().listener();
      Await.until(DEADLINE, "the listener listens", listener::listening);
      assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
      Await.until(DEADLINE, "the listener stopped", () -> !listener.alive());
      OutboxRelay again = relay(relaying, new RecordingPublisher(), LONG_POLL);
      Await.until(DEADLINE, "the listener listens again", listener::listening);
      assertThat(relaying.wakes().listener()).isSameAs(listener);
      again.close(Duration.ofSeconds(5));
      relaying.close();
      assertThat(listener.alive()).isFalse();
    }
  }
}

package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.sql.Connection;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Faults aimed at the PostgreSQL outbox listener's lifecycle: relays started and closed in quick
 * succession, and a storage closed while its listener is stuck opening a connection on a link
 * that accepts and then answers nothing.
 */
@DisplayName("outbox listener under lifecycle and link faults")
class JdbcOutboxWakeAttackTest {
  private static final Duration LONG_POLL = Duration.ofSeconds(30);
  private static final Duration DEADLINE = Duration.ofSeconds(10);

  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
  private final String prefix = TestDatabase.newPrefix();
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

  private HikariDataSource newPool(String url) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(url);
    hc.setMaximumPoolSize(3);
    hc.setMinimumIdle(0);
    try (Connection c = db.connection()) {
      hc.setSchema(c.getSchema());
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
    return new HikariDataSource(hc);
  }

  private static long listenerThreads(String channel) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().equals("relaykit-outbox-listener-" + channel))
        .count();
  }

  @Test
  @DisplayName("relays started and closed 30 times in a row: never more than one listener thread"
      + " (and connection) at once, none after the storage closes")
  void startCloseCyclesKeepOneListener() throws Exception {
    JdbcStorage storage = closing(JdbcStorage.open(closing(newPool(db.url)), Dialect.POSTGRESQL,
        prefix, Duration.ofDays(7), InstantSource.system()));
    String channel = storage.wakes().channel();
    long most = 0;
    for (int i = 0; i < 30; i++) {
      OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), new RecordingPublisher(),
          new InMemoryDeadLetterStore()).pollInterval(LONG_POLL).build();
      relay.start();
      most = Math.max(most, listenerThreads(channel));
      assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
      most = Math.max(most, listenerThreads(channel));
    }
    assertThat(storage.outboxWakeup().subscribers()).isZero();
    assertThat(most).as("listener threads alive at once").isLessThanOrEqualTo(1);
    storage.close();
    assertThat(listenerThreads(channel)).isZero();
  }

  @Test
  @DisplayName("closing the storage while its listener backs off between refused connects ends"
      + " the thread before close returns")
  void closeDuringReconnectBackoff() throws Exception {
    FaultProxy proxy = closing(FaultProxy.to("127.0.0.1", 5432));
    String via = db.url.replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
    proxy.refuseConnections();
    JdbcStorage storage = JdbcStorage.open(closing(newPool(db.url)), Dialect.POSTGRESQL, prefix,
        Duration.ofDays(7), InstantSource.system())
        .outboxListenerConnections(() -> java.sql.DriverManager.getConnection(via));
    String channel = storage.wakes().channel();
    OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), new RecordingPublisher(),
        new InMemoryDeadLetterStore()).pollInterval(LONG_POLL).build();
    relay.start();
    PostgresOutboxListener listener = storage.wakes().listener();
    Await.until(Duration.ofSeconds(20), "four refused connects", () -> listener.failures() >= 4);
    storage.close();
    assertThat(listenerThreads(channel)).as("listener threads once close returned").isZero();
    assertThat(listener.listening()).isFalse();
    relay.close(Duration.ofSeconds(5));
  }

  @Test
  @DisplayName("a time source that steps back (an injected wall clock) does not stall NOTIFYs"
      + " for the size of the step: the next append after the step notifies, then coalescing"
      + " resumes from there")
  void coalescingAfterSourceStepsBack() {
    AtomicLong nanos = new AtomicLong(3_600_000_000_000L);
    OutboxNotifier n = new OutboxNotifier("c_wake", Duration.ofMillis(10), nanos::get);
    assertThat(n.claim()).isTrue();
    nanos.addAndGet(-3_600_000_000_000L); // one hour back
    assertThat(n.claim()).as("first append after the step").isTrue();
    assertThat(n.claim()).as("same interval").isFalse();
    nanos.addAndGet(10_000_000);
    assertThat(n.claim()).as("one interval later").isTrue();
  }

  @Test
  @DisplayName("the default listener connection on a link that accepts and answers nothing:"
      + " the open times out, and closing the storage ends the listener's thread")
  void blackholedOpenEndsOnClose() throws Exception {
    FaultProxy proxy = closing(FaultProxy.to("127.0.0.1", 5432));
    String via = db.url.replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
    // Never started: only its URL and settings make the listener's connections.
    HikariDataSource viaProxy = closing(newPool(via));
    JdbcStorage.ListenerConnections connections = JdbcStorage.hikariConnections(viaProxy);
    assertThat(connections).isNotNull();
    JdbcStorage storage = JdbcStorage.open(closing(newPool(db.url)), Dialect.POSTGRESQL, prefix,
        Duration.ofDays(7), InstantSource.system()).outboxListenerConnections(connections);
    String channel = storage.wakes().channel();
    proxy.blackhole();
    OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), new RecordingPublisher(),
        new InMemoryDeadLetterStore()).pollInterval(LONG_POLL).build();
    relay.start();
    PostgresOutboxListener listener = storage.wakes().listener();
    Await.until(DEADLINE, "the listener is opening", () -> proxy.acceptedConnections() >= 1);
    Await.until(Duration.ofSeconds(30), "the stuck open failed", () -> listener.failures() >= 1);
    assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
    storage.close();
    Await.until(Duration.ofSeconds(15), "the listener's thread ended",
        () -> listenerThreads(channel) == 0);
    assertThat(listener.listening()).isFalse();
  }
}

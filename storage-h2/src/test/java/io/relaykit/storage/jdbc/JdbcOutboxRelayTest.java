package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.ForwardingOutboxStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The outbox relay (core logic) on the JDBC outbox; {@link H2OutboxRelayTest} runs it on H2 in
 * memory, {@link PostgresOutboxRelayTest} on PostgreSQL (each database claims its own way).
 */
abstract class JdbcOutboxRelayTest {
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final String DEST = "orders";

  private final TestDatabase db;
  private final FakeClock clock = new FakeClock();
  private final RecordingPublisher publisher = new RecordingPublisher();
  private final LifecycleLog log = new LifecycleLog(100_000);
  private final List<OutboxRelay> relays = new ArrayList<>();
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;
  private JdbcDeadLetterStore deadLetters;

  JdbcOutboxRelayTest(TestDatabase.Kind kind) {
    this.db = TestDatabase.shared(kind);
  }

  @BeforeEach
  void setUp() {
    storage = db.storage(clock);
    outbox = storage.outboxStore();
    deadLetters = storage.deadLetterStore();
  }

  @AfterEach
  void stopRelays() {
    relays.forEach(r -> r.close(Duration.ofSeconds(10)));
  }

  private OutboxRelay.Builder relay(String owner) {
    return OutboxRelay.builder(outbox, publisher, deadLetters)
        .owner(owner).clock(clock).lease(LEASE).listener(log)
        .confirmTimeout(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
        .errorBackoff(Backoff.fixed(Duration.ofMillis(10)))
        .retryPolicy(RetryPolicy.builder().maxAttempts(4)
            .backoff(Backoff.exponential(Duration.ofSeconds(1)).withMax(Duration.ofSeconds(5))
                .withJitter(Jitter.FULL)).build());
  }

  private OutboxRelay started(OutboxRelay r) {
    relays.add(r);
    r.start();
    return r;
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.placed").key(key).payload(body)
        .createdAt(FakeClock.EPOCH).build();
  }

  private void appendAll(List<Message> messages) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.appendAll(c, DEST, messages);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  private long unsentRows() {
    return db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox WHERE state = 0");
  }

  @Test
  @DisplayName("3 relays over 10 000 messages publish each exactly once, in per-key order")
  void threeRelaysExactlyOnce() {
    int total = 10_000;
    List<Message> messages = new ArrayList<>(total);
    for (int i = 0; i < total; i++) {
      // 200 keys of 40 messages each, and 2 000 messages without a key.
      String key = i % 5 == 0 ? null : "customer-" + (i % 200);
      messages.add(message(key, Integer.toString(i)));
    }
    appendAll(messages);
    for (int i = 0; i < 3; i++) {
      started(relay("relay-" + i).batchSize(500).build());
    }
    Await.value(Duration.ofSeconds(150), "all 10 000 messages confirmed",
        publisher::confirmedCount, n -> n == total);
    relays.forEach(r -> assertThat(r.close(Duration.ofSeconds(10))).isTrue());

    assertThat(publisher.published()).hasSize(total);
    assertThat(publisher.confirmedById().values()).allMatch(n -> n.get() == 1);
    Map<String, Integer> lastByKey = new HashMap<>();
    for (Message m : publisher.published()) {
      if (m.key().isPresent()) {
        int n = Integer.parseInt(m.payloadUtf8());
        Integer previous = lastByKey.put(m.key().get(), n);
        assertThat(previous == null || previous < n)
            .as("key %s published %s after %s", m.key().get(), n, previous).isTrue();
      }
    }
    assertThat(outbox.stats(clock.instant())).isEqualTo(new OutboxStats(0, Duration.ZERO, total));
  }

  @Test
  @DisplayName("a relay killed mid-batch: another relay publishes its rows once the lease expires")
  void killedRelayIsTakenOver() throws Exception {
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      messages.add(message("k" + i, "m" + i));
    }
    appendAll(messages);
    CountDownLatch frozen = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    AtomicInteger publishedByCrashed = new AtomicInteger();
    // The crashed relay's broker connection hangs on the fourth publish: its process is gone
    // before it confirms or marks anything.
    Publisher hanging = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        if (publishedByCrashed.incrementAndGet() == 4) {
          frozen.countDown();
          try {
            never.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          throw new PublishException("killed");
        }
        return new CompletableFuture<>();
      }

      @Override
      public void close() {}
    };
    // Its process is gone: no heartbeat reaches the database to renew its lease.
    ForwardingOutboxStore gone = new ForwardingOutboxStore(outbox) {
      @Override
      public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
          Instant now) {
        throw new IllegalStateException("the crashed relay's process is gone");
      }
    };
    OutboxRelay crashed = OutboxRelay.builder(gone, hanging, deadLetters).owner("crashed")
        .clock(clock).lease(LEASE).confirmTimeout(Duration.ofMillis(100)).build();
    AtomicReference<OutboxRelay.Batch> crashedResult = new AtomicReference<>();
    Thread t = new Thread(() -> crashedResult.set(crashed.runOnce()));
    t.start();
    frozen.await();

    OutboxRelay survivor = relay("survivor").build();
    assertThat(survivor.runOnce().claimed()).isZero();
    assertThat(publisher.published()).isEmpty();
    clock.advance(LEASE);
    OutboxRelay.Batch b = survivor.runOnce();
    assertThat(b.claimed()).isEqualTo(10);
    assertThat(b.sent()).isEqualTo(10);
    assertThat(publisher.confirmedById().keySet())
        .containsExactlyInAnyOrderElementsOf(messages.stream().map(Message::id).toList());
    assertThat(unsentRows()).isZero();

    // The frozen relay wakes up late: it can no longer mark or reschedule rows it lost.
    never.countDown();
    t.join();
    assertThat(crashedResult.get().leaseLost()).isEqualTo(10);
    assertThat(outbox.stats(clock.instant()).sent()).isEqualTo(10);
  }

  @Test
  @DisplayName("a failing key is parked and retried with backoff while other keys flow; its order"
      + " holds")
  void failingKeyIsParked() {
    appendAll(List.of(message("a", "a1"), message("b", "b1"), message("a", "a2"),
        message("b", "b2"), message("a", "a3"), message("b", "b3")));
    AtomicInteger failuresLeft = new AtomicInteger(2);
    publisher.failWith(m -> m.payloadUtf8().equals("a1") && failuresLeft.getAndDecrement() > 0
        ? new PublishException("broker nack") : null);
    OutboxRelay relay = relay("r").build();

    for (int i = 0; i < 5; i++) {
      relay.runOnce();
    }
    assertThat(publisher.publishedPayloads()).containsExactly("a1", "b1", "b2", "b3");
    assertThat(log.history(publisher.published().get(0).id()))
        .extracting(e -> e.stage()).containsExactly(Stage.PUBLISHED, Stage.RETRIED);

    clock.advance(Duration.ofSeconds(5));
    relay.runOnce();
    clock.advance(Duration.ofSeconds(5));
    for (int i = 0; i < 4; i++) {
      relay.runOnce();
    }
    assertThat(publisher.publishedPayloads())
        .containsExactly("a1", "b1", "b2", "b3", "a1", "a1", "a2", "a3");
    assertThat(unsentRows()).isZero();
    assertThat(deadLetters.count(DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("out of attempts, or on a permanent failure, a message becomes a dead letter and its"
      + " key moves on")
  void deadLetters() {
    Message poison = message("a", "poison");
    Message rejected = message("b", "rejected");
    appendAll(List.of(poison, message("a", "after-poison"), rejected,
        message("b", "after-rejected")));
    publisher.failWith(m -> m.payloadUtf8().equals("poison") ? new PublishException("nack")
        : m.payloadUtf8().equals("rejected") ? new MessageRejectedException("too large") : null);
    OutboxRelay relay = relay("r").build();

    java.time.Instant firstFailure = clock.instant();
    relay.runOnce();
    DeadLetter r = deadLetters.list(DeadLetterQuery.all().withMessageId(rejected.id()))
        .stream().findFirst().orElseThrow();
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.reason()).startsWith("permanent failure");
    assertThat(r.exceptionClass()).isEqualTo(MessageRejectedException.class.getName());
    assertThat(r.source()).isEqualTo(DEST);
    assertThat(r.message()).isEqualTo(rejected);
    for (int attempt = 2; attempt <= 4; attempt++) {
      clock.advance(Duration.ofSeconds(5));
      relay.runOnce();
    }
    DeadLetter p = deadLetters.list(DeadLetterQuery.all().withMessageId(poison.id()))
        .stream().findFirst().orElseThrow();
    assertThat(p.attempts()).isEqualTo(4);
    assertThat(p.reason()).startsWith("attempts exhausted (4 of 4)");
    assertThat(p.firstFailureAt()).isEqualTo(firstFailure);
    assertThat(p.lastFailureAt()).isEqualTo(clock.instant());
    relay.runOnce();
    assertThat(publisher.publishedPayloads()).contains("after-poison", "after-rejected");
    assertThat(unsentRows()).isZero();
    assertThat(log.history(poison.id())).extracting(e -> e.stage()).last()
        .isEqualTo(Stage.DEAD_LETTERED);
  }

  @Test
  @DisplayName("a corrupt outbox row goes to dead letters with its reason; the running relay"
      + " publishes the rest and keeps going")
  void corruptRowDoesNotStopRelay() {
    appendAll(List.of(message("a", "before")));
    long bad = JdbcOutboxStoreTest.insertRaw(db, storage.tablePrefix(), "corrupt-1", null,
        "not an envelope", "x".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    appendAll(List.of(message("b", "after")));
    started(relay("r").build());
    Await.until(Duration.ofSeconds(30), "both good rows confirmed",
        () -> publisher.confirmedCount() == 2);
    appendAll(List.of(message("a", "later")));
    Await.until(Duration.ofSeconds(30), "a row appended later confirmed too",
        () -> publisher.confirmedCount() == 3);

    assertThat(publisher.publishedPayloads()).containsExactlyInAnyOrder("before", "after",
        "later");
    DeadLetter d = deadLetters.list(DeadLetterQuery.all().withMessageId("corrupt-1"))
        .stream().findFirst().orElseThrow();
    assertThat(d.reason()).startsWith("undecodable outbox row seq " + bad)
        .contains("corrupt envelope column");
    assertThat(d.source()).isEqualTo(DEST);
    // Confirmed is not yet marked sent: the relay marks the batch after the confirms.
    Await.until(Duration.ofSeconds(30), "every row marked sent", () -> unsentRows() == 0);
  }

  @Test
  @DisplayName("append refuses a message type longer than dead_letter.msg_type holds, naming it;"
      + " nothing is written")
  void appendRefusesWhatDeadLettersCannotHold() throws SQLException {
    Message longType = Message.builder().type("t".repeat(256)).key("a").payload("x")
        .createdAt(FakeClock.EPOCH).build();
    try (Connection c = db.connection()) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> outbox.append(c, DEST, longType))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("message type must be at most 255")
          .hasMessageContaining("dead_letter.msg_type");
    }
    assertThat(unsentRows()).isZero();
  }

  @Test
  @DisplayName("a poison row at the head (written around append, its type too long for a dead"
      + " letter, expired) parks its key only: other keys and later rows are published")
  void poisonRowAtTheHead() {
    Message poison = Message.builder().type("t".repeat(300)).key("a").payload("poison")
        .createdAt(FakeClock.EPOCH).expiresAt(FakeClock.EPOCH.plusSeconds(1)).build();
    JdbcOutboxStoreTest.insertRaw(db, storage.tablePrefix(), poison.id(), "a",
        Envelopes.encode(poison), poison.payload());
    appendAll(List.of(message("a", "a2"), message("b", "b1"), message(null, "n1")));
    clock.advance(Duration.ofSeconds(2));
    OutboxRelay relay = relay("r").build();

    OutboxRelay.Batch b = relay.runOnce();
    assertThat(b.failed()).isEqualTo(1);
    assertThat(publisher.publishedPayloads()).containsExactlyInAnyOrder("b1", "n1");
    assertThat(relay.counters().rowFailures()).isEqualTo(1);
    appendAll(List.of(message("b", "b2")));
    relay.runOnce();
    assertThat(publisher.publishedPayloads()).containsExactlyInAnyOrder("b1", "n1", "b2");
    // Another relay is not stalled by it either.
    appendAll(List.of(message("c", "c1")));
    relay("other").build().runOnce();
    assertThat(publisher.publishedPayloads()).contains("c1");
    assertThat(deadLetters.count(DeadLetterQuery.all())).isZero();
    assertThat(unsentRows()).isEqualTo(2);
  }

  @Test
  @DisplayName("an expired message is never published: it is dead-lettered with the reason")
  void expiredMessage() {
    Message code = Message.builder().type("sms.code").payload("123456")
        .createdAt(FakeClock.EPOCH).expiresAt(FakeClock.EPOCH.plusSeconds(300)).build();
    appendAll(List.of(code));
    clock.advance(Duration.ofSeconds(300));
    relay("r").build().runOnce();
    assertThat(publisher.published()).isEmpty();
    assertThat(deadLetters.list(DeadLetterQuery.all().withMessageId(code.id()))
        .stream().findFirst().orElseThrow().reason()).startsWith("expired");
    assertThat(log.history(code.id())).extracting(e -> e.stage()).containsExactly(Stage.EXPIRED);
    assertThat(unsentRows()).isZero();
  }

  @Test
  @DisplayName("replaying a dead letter twice puts it back in the outbox once; it is published once")
  void replayTwicePublishesOnce() {
    Message m = message("a", "replay-me");
    appendAll(List.of(m));
    publisher.failWith(x -> new MessageRejectedException("no route"));
    OutboxRelay relay = relay("r").build();
    relay.runOnce();
    assertThat(deadLetters.list(DeadLetterQuery.all().withMessageId(m.id()))
        .stream().findFirst()).isPresent();
    publisher.failWith(x -> null);

    String id = DeadLetter.idOf(m.id(), DEST, null);
    assertThat(deadLetters.replayToOutbox(id, outbox)).isPresent();
    assertThat(deadLetters.replayToOutbox(id, outbox)).isEmpty();
    relay.runOnce();
    relay.runOnce();
    assertThat(publisher.confirmedById().get(m.id()).get()).isEqualTo(1);
    assertThat(deadLetters.count(DeadLetterQuery.all())).isZero();
    assertThat(outbox.stats(clock.instant()).sent()).isEqualTo(1);
  }

  @Test
  @DisplayName("the database going away under a running relay: it backs off, resumes, loses"
      + " nothing")
  void survivesDatabaseOutage() {
    FlakyDataSource flaky = new FlakyDataSource(db.dataSource());
    JdbcStorage flakyStorage = JdbcStorage.open(flaky, db.dialect(), storage.tablePrefix(),
        Duration.ofDays(7), clock, DatabaseClock.of(clock), LifecycleListener.noop(), true);
    List<Message> first = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      first.add(message("k" + (i % 7), "first-" + i));
    }
    appendAll(first);
    OutboxRelay relay = started(OutboxRelay.builder(flakyStorage.outboxStore(), publisher,
        flakyStorage.deadLetterStore()).owner("r").clock(clock).lease(LEASE).batchSize(5)
        .pollInterval(Duration.ofMillis(5)).errorBackoff(Backoff.fixed(Duration.ofMillis(10)))
        .build());
    Await.until(Duration.ofSeconds(30), "some messages published",
        () -> publisher.confirmedCount() >= 5);

    flaky.down(true);
    Await.until(Duration.ofSeconds(30), "the relay tried and failed 3 times",
        () -> flaky.failures.get() >= 3);
    List<Message> second = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      second.add(message("k" + (i % 7), "second-" + i));
    }
    appendAll(second);
    flaky.closeNextConnections(3);
    flaky.down(false);
    // A markSent that failed left its (published) rows leased: time moves on, leases expire, and
    // those rows are published again (at least once).
    Await.until(Duration.ofSeconds(60), "every message confirmed after the outage", () -> {
      clock.advance(Duration.ofSeconds(1));
      return publisher.confirmedCount() == 70;
    });
    assertThat(relay.close(Duration.ofSeconds(10))).isTrue();
    assertThat(flaky.failures.get()).isGreaterThanOrEqualTo(6);
    assertThat(outbox.stats(clock.instant())).isEqualTo(new OutboxStats(0, Duration.ZERO, 70));
  }

  @Test
  @DisplayName("close stops an idle background relay promptly")
  void closeStopsLoop() {
    OutboxRelay relay = started(relay("r").pollInterval(Duration.ofMinutes(10)).build());
    appendAll(List.of(message("a", "x")));
    assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
    assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
  }
}

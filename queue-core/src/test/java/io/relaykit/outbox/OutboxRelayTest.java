package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.testing.Awaits;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The relay's own logic on the in-memory outbox; the JDBC tests in storage-h2 cover the rest. */
class OutboxRelayTest {
  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2026-01-01T00:00:00Z"));
  private final InstantSource clock = now::get;
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();
  private final InMemoryDeadLetterStore deadLetters = new InMemoryDeadLetterStore();
  private final List<Message> published = new ArrayList<>();

  /** Confirms at once, unless the payload says "slow": then it never confirms. */
  private final Publisher publisher = new Publisher() {
    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      published.add(message);
      if (message.payloadUtf8().equals("slow")) {
        return new CompletableFuture<>();
      }
      return CompletableFuture.completedFuture(
          new PublishReceipt(message.id(), destination, "p" + published.size()));
    }

    @Override
    public void close() {}
  };

  private Message append(String key, String body) {
    Message m = Message.builder().type("t").key(key).payload(body).createdAt(now.get()).build();
    store.append("orders", m);
    return m;
  }

  @Test
  @DisplayName("with keyRun(1) one cycle publishes the ready heads, marks them sent, and the next"
      + " cycle the rest")
  void cycle() {
    append("a", "a1");
    append("a", "a2");
    append(null, "n1");
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock)
        .keyRun(1).build();
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Batch(2, 2, 0, 0, 0, 0));
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Batch(1, 1, 0, 0, 0, 0));
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Batch(0, 0, 0, 0, 0, 0));
    assertThat(published).extracting(Message::payloadUtf8).containsExactly("a1", "n1", "a2");
    assertThat(store.stats(now.get()).sent()).isEqualTo(3);
  }

  @Test
  @DisplayName("by default a cycle takes a key's run: a1 and a2 in one claim, a1 published first")
  void cycleWithRuns() {
    append("a", "a1");
    append("a", "a2");
    append(null, "n1");
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock).build();
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Batch(3, 3, 0, 0, 0, 0));
    assertThat(published).extracting(Message::payloadUtf8).containsExactly("a1", "n1", "a2");
  }

  @Test
  @DisplayName("a missing confirm counts as a failed attempt and is rescheduled, not marked sent")
  void missingConfirm() {
    append("a", "slow");
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock)
        .confirmTimeout(Duration.ofMillis(20)).build();
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Batch(1, 0, 1, 0, 0, 0));
    assertThat(store.stats(now.get()).unsent()).isEqualTo(1);
    assertThat(deadLetters.count(DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("sent rows older than the retention are purged when the relay is idle")
  void purgesSentRows() {
    append("a", "a1");
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock)
        .retention(Duration.ofHours(1)).purgeInterval(Duration.ofMinutes(1)).build();
    relay.runOnce();
    relay.runOnce();
    assertThat(store.stats(now.get()).sent()).isEqualTo(1);
    now.set(now.get().plus(Duration.ofHours(2)));
    relay.runOnce();
    assertThat(store.stats(now.get()).sent()).isZero();
  }

  @Test
  @DisplayName("the builder names invalid settings; start twice and start after close are refused")
  void validation() {
    assertThatThrownBy(() -> OutboxRelay.builder(null, publisher, deadLetters))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("store");
    OutboxRelay.Builder b = OutboxRelay.builder(store, publisher, deadLetters);
    assertThatThrownBy(() -> b.batchSize(0).build()).hasMessageContaining("batchSize");
    assertThatThrownBy(() -> OutboxRelay.builder(store, publisher, deadLetters).owner(" ")
        .build()).hasMessageContaining("owner");
    assertThatThrownBy(() -> OutboxRelay.builder(store, publisher, deadLetters)
        .lease(Duration.ofSeconds(5)).confirmTimeout(Duration.ofSeconds(5)).build())
        .hasMessageContaining("confirmTimeout");
    assertThatThrownBy(() -> OutboxRelay.builder(store, publisher, deadLetters)
        .pollInterval(Duration.ZERO).build()).hasMessageContaining("pollInterval");

    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).build();
    relay.start();
    assertThatThrownBy(relay::start).isInstanceOf(IllegalStateException.class);
    assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
    assertThatThrownBy(relay::start).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  @DisplayName("the background loop runs the next cycle at once after a partial batch: a keyed"
      + " backlog with fewer keys than the batch size does not wait a poll interval per cycle")
  void keyedBacklogDoesNotPause() throws InterruptedException {
    for (int i = 0; i < 6; i++) {
      append("k" + (i % 2), "m" + i);
    }
    CountDownLatch confirmed = new CountDownLatch(6);
    Publisher counting = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        confirmed.countDown();
        return CompletableFuture.completedFuture(
            new PublishReceipt(message.id(), destination, "p"));
      }

      @Override
      public void close() {}
    };
    // Each claim finds 2 of 10 (one head per key); the idle pause is an hour.
    OutboxRelay relay = OutboxRelay.builder(store, counting, deadLetters).clock(clock)
        .batchSize(10).pollInterval(Duration.ofHours(1)).build();
    relay.start();
    try {
      assertThat(confirmed.await(30, TimeUnit.SECONDS)).as("all 6 published").isTrue();
    } finally {
      assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
    }
    assertThat(store.stats(now.get()).unsent()).isZero();
  }

  @Test
  @DisplayName("the background loop goes on at once only after a cycle that made progress")
  void pauseAfterACycle() {
    Duration poll = Duration.ofSeconds(7);
    // claimed, sent, retried, deadLettered, leaseLost
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(0, 0, 0, 0, 0, 0), 100, poll))
        .as("nothing claimed").isEqualTo(poll);
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(3, 3, 0, 0, 0, 0), 100, poll))
        .as("a partial batch that sent: one row per key of a keyed backlog").isZero();
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(3, 0, 0, 3, 0, 0), 100, poll))
        .as("a partial batch that dead-lettered frees its keys").isZero();
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(100, 0, 100, 0, 0, 0), 100, poll))
        .as("a full batch: the backlog goes on").isZero();
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(3, 0, 3, 0, 0, 0), 100, poll))
        .as("only rescheduled (failing publisher): no claim-and-reschedule spin").isEqualTo(poll);
    assertThat(OutboxRelay.pauseAfter(new OutboxRelay.Batch(3, 0, 0, 0, 3, 0), 100, poll))
        .as("only lost leases").isEqualTo(poll);
  }

  @Test
  @DisplayName("the backlog goes to the metrics listener at most once per metrics interval")
  void backlogMetrics() {
    List<String> samples = new ArrayList<>();
    io.relaykit.monitor.MetricsListener metrics = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void backlogDepth(String destination, long depth) {
        samples.add(destination + " depth " + depth);
      }

      @Override
      public void oldestAge(String destination, Duration age) {
        samples.add(destination + " age " + age.toSeconds() + "s");
      }
    };
    append("a", "a1");
    append("a", "a2");
    now.set(now.get().plusSeconds(5));
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock)
        .metrics(metrics).metricsInterval(Duration.ofSeconds(10)).build();

    relay.runOnce(); // samples before claiming: 2 unsent, the oldest 5 s old
    relay.runOnce(); // within the interval: no sample
    now.set(now.get().plusSeconds(10));
    relay.runOnce(); // everything sent

    assertThat(samples).containsExactly("outbox depth 2", "outbox age 5s",
        "outbox depth 0", "outbox age 0s");
  }

  @Test
  @DisplayName("a bad metrics setting is refused, naming it")
  void badMetricsSettings() {
    assertThatThrownBy(() -> OutboxRelay.builder(store, publisher, deadLetters).metrics(null)
        .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("metrics");
    assertThatThrownBy(() -> OutboxRelay.builder(store, publisher, deadLetters)
        .metricsInterval(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("metricsInterval");
  }

  // ---- dead-letter depth ---------------------------------------------------------------------

  private static final Duration WAIT = Duration.ofSeconds(10);

  /** Records deadLetterDepth calls as "destination=depth@thread". */
  private static final class DepthRecorder implements MetricsListener {
    final LinkedBlockingQueue<String> depths = new LinkedBlockingQueue<>();
    final LinkedBlockingQueue<String> threads = new LinkedBlockingQueue<>();

    @Override
    public void deadLetterDepth(String destination, long depth) {
      threads.add(Thread.currentThread().getName()); // before the depth the test waits for
      depths.add(destination + "=" + depth);
    }
  }

  /** {@link #deadLetters} with {@code count} replaced by {@code count}. */
  private DeadLetterStore countingWith(ToLongFunction<DeadLetterQuery> count) {
    return (DeadLetterStore) Proxy.newProxyInstance(DeadLetterStore.class.getClassLoader(),
        new Class<?>[] {DeadLetterStore.class}, (proxy, method, args) -> {
          if (method.getName().equals("count")) {
            return count.applyAsLong((DeadLetterQuery) args[0]);
          }
          try {
            return method.invoke(deadLetters, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private void deadLetter(String body) {
    Message m = Message.builder().type("t").payload(body).build();
    deadLetters.add(DeadLetter.of(m, "orders", "permanent", null, 1, now.get(), now.get()));
  }

  @Test
  @DisplayName("the dead-letter depth is one total under \"all\", counted off the relay's thread"
      + " once per metrics interval, and follows removals")
  void deadLetterDepth() throws Exception {
    deadLetter("d1");
    deadLetter("d2");
    deadLetter("d3");
    DepthRecorder metrics = new DepthRecorder();
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters).clock(clock)
        .metrics(metrics).metricsInterval(Duration.ofSeconds(10)).build();
    try {
      relay.runOnce();
      assertThat(metrics.depths.poll(10, TimeUnit.SECONDS)).isEqualTo("all=3");
      assertThat(metrics.threads.poll()).isNotEqualTo(Thread.currentThread().getName())
          .startsWith("relaykit-relay-dead-letter-count-");
      relay.runOnce(); // within the interval: no count
      deadLetters.remove(deadLetters.list(DeadLetterQuery.all()).get(0).id());
      now.set(now.get().plusSeconds(10));
      relay.runOnce();
      assertThat(metrics.depths.poll(10, TimeUnit.SECONDS)).isEqualTo("all=2");
      assertThat(metrics.depths).as("one count per due sample").isEmpty();
      assertThat(relay.counters().deadLetterCountFailures()).isZero();
    } finally {
      relay.close();
    }
  }

  @Test
  @DisplayName("a dead-letter count that throws is counted and skipped; relaying goes on")
  void failingDeadLetterCount() {
    AtomicInteger counts = new AtomicInteger();
    DeadLetterStore failing = countingWith(q -> {
      counts.incrementAndGet();
      throw new IllegalStateException("dead-letter store down");
    });
    DepthRecorder metrics = new DepthRecorder();
    OutboxRelay relay = OutboxRelay.builder(store, publisher, failing).clock(clock)
        .metrics(metrics).metricsInterval(Duration.ofSeconds(10)).build();
    try {
      append("a", "a1");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      Awaits.until(WAIT, "the first count failed",
          () -> relay.counters().deadLetterCountFailures() == 1);
      now.set(now.get().plusSeconds(10));
      append("b", "b1");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      Awaits.until(WAIT, "the second count failed",
          () -> relay.counters().deadLetterCountFailures() == 2);
      assertThat(counts).hasValue(2);
      assertThat(metrics.depths).as("no depth from a failed count").isEmpty();
      assertThat(published).extracting(Message::payloadUtf8).containsExactly("a1", "b1");
    } finally {
      relay.close();
    }
  }

  @Test
  @DisplayName("a dead-letter count that hangs stalls neither the relay's cycles nor its close;"
      + " due samples meanwhile are skipped, and the count reports when it returns")
  void hungDeadLetterCount() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger counts = new AtomicInteger();
    DeadLetterStore hanging = countingWith(q -> {
      counts.incrementAndGet();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return 7;
    });
    DepthRecorder metrics = new DepthRecorder();
    OutboxRelay relay = OutboxRelay.builder(store, publisher, hanging).clock(clock)
        .metrics(metrics).metricsInterval(Duration.ofSeconds(10)).build();
    try {
      append("a", "a1");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      Awaits.until(WAIT, "the count started", () -> counts.get() == 1);
      for (int i = 0; i < 3; i++) {
        now.set(now.get().plusSeconds(10));
        append("k" + i, "m" + i);
        assertThat(relay.runOnce().sent()).as("cycle " + i + " while the count hangs")
            .isEqualTo(1);
      }
      assertThat(relay.counters().deadLetterCountsSkipped()).isEqualTo(3);
      assertThat(counts).as("never a second count in flight").hasValue(1);
      release.countDown();
      assertThat(metrics.depths.poll(10, TimeUnit.SECONDS)).isEqualTo("all=7");
    } finally {
      release.countDown();
      assertThat(relay.close(Duration.ofSeconds(5))).isTrue();
    }
  }

  @Test
  @DisplayName("without metrics, with MetricsListener.noop() or with deadLetterDepth(false) the"
      + " relay never counts dead letters")
  void noDeadLetterCountWithoutMetrics() {
    AtomicInteger counts = new AtomicInteger();
    DeadLetterStore counting = countingWith(q -> counts.incrementAndGet());
    String owner = "no-count-" + System.nanoTime();
    List<OutboxRelay> relays = List.of(
        OutboxRelay.builder(store, publisher, counting).clock(clock).owner(owner).build(),
        OutboxRelay.builder(store, publisher, counting).clock(clock).owner(owner)
            .metrics(MetricsListener.noop()).build(),
        OutboxRelay.builder(store, publisher, counting).clock(clock).owner(owner)
            .metrics(new DepthRecorder()).deadLetterDepth(false).build());
    for (OutboxRelay relay : relays) {
      append("a", "x");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      // A relay that counts starts its counting thread inside runOnce, before it returns.
      assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
          .doesNotContain("relaykit-relay-dead-letter-count-" + owner);
      relay.close();
    }
    assertThat(counts).hasValue(0);
    OutboxRelay control = OutboxRelay.builder(store, publisher, counting).clock(clock)
        .owner(owner).metrics(new DepthRecorder()).build();
    try {
      control.runOnce();
      assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
          .as("the control relay's counting thread").contains(
              "relaykit-relay-dead-letter-count-" + owner);
      Awaits.until(WAIT, "the control relay counted", () -> counts.get() == 1);
    } finally {
      control.close();
    }
  }
}

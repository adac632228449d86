package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.retry.Backoff;
import io.relaykit.testing.Awaits;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The in-JVM wake: a commit ends a relay's idle wait at once, and nothing else changes. */
class OutboxWakeupTest {
  /** Far longer than any deadline below: a row published in time was woken, not polled. */
  private static final Duration LONG_POLL = Duration.ofSeconds(30);
  private static final Duration DEADLINE = Duration.ofSeconds(5);

  private final List<Message> published = new CopyOnWriteArrayList<>();
  private final Publisher publisher = new Publisher() {
    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      published.add(message);
      return CompletableFuture.completedFuture(
          new PublishReceipt(message.id(), destination, "p" + published.size()));
    }

    @Override
    public void close() {}
  };

  private static Message message(String key, String body) {
    return Message.builder().type("t").key(key).payload(body).build();
  }

  @Test
  @DisplayName("a row appended to an idle in-memory outbox is published long before the 30 s poll")
  void appendWakesIdleRelay() {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    try (OutboxRelay relay = OutboxRelay.builder(store, publisher, new InMemoryDeadLetterStore())
        .pollInterval(LONG_POLL).build()) {
      relay.start();
      Awaits.until(DEADLINE, "the relay subscribed",
          () -> store.wakeup().orElseThrow().subscribers() == 1);
      // The first (empty) claim ran before the append or after it: either way it is now idle.
      for (int i = 0; i < 3; i++) {
        store.append("orders", message("k", "m" + i));
        int expected = i + 1;
        Awaits.until(DEADLINE, "message " + i + " published", () -> published.size() == expected);
      }
      assertThat(published).extracting(Message::payloadUtf8).containsExactly("m0", "m1", "m2");
      assertThat(relay.wokenClaims()).isGreaterThanOrEqualTo(1);
    }
    assertThat(store.wakeup().orElseThrow().subscribers()).isZero();
  }

  @Test
  @DisplayName("OutboxStore.committed() wakes the relays of a store whose appends do not wake")
  void explicitCommittedCall() {
    InMemoryOutboxStore inner = new InMemoryOutboxStore();
    OutboxWakeup wakeup = OutboxWakeup.create();
    // A store that appends "in a transaction": its rows wake nobody until committed() is called.
    try (OutboxRelay relay = OutboxRelay.builder(inner, publisher, new InMemoryDeadLetterStore())
        .pollInterval(LONG_POLL).wakeup(wakeup).build()) {
      relay.start();
      Awaits.until(DEADLINE, "the relay subscribed", () -> wakeup.subscribers() == 1);
      inner.append("orders", message(null, "x")); // wakes the store's own wakeup: no subscriber
      OutboxStore caller = new DelegatingStore(inner, wakeup);
      caller.committed();
      Awaits.until(DEADLINE, "the committed row published", () -> published.size() == 1);
    }
  }

  @Test
  @DisplayName("wakes during a failure back-off are remembered as one flag, not claimed: a failing"
      + " store is not claimed once per commit")
  void coalescedAndNoBusyLoop() throws Exception {
    AtomicInteger claims = new AtomicInteger();
    CountDownLatch failing = new CountDownLatch(1);
    InMemoryOutboxStore inner = new InMemoryOutboxStore();
    OutboxWakeup wakeup = OutboxWakeup.create();
    OutboxStore failingStore = new DelegatingStore(inner, wakeup) {
      @Override
      public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
          Instant now) {
        claims.incrementAndGet();
        failing.countDown();
        throw new IllegalStateException("database down");
      }
    };
    try (OutboxRelay relay = OutboxRelay.builder(failingStore, publisher,
        new InMemoryDeadLetterStore()).pollInterval(LONG_POLL)
        .errorBackoff(Backoff.fixed(LONG_POLL)).build()) {
      relay.start();
      assertThat(failing.await(5, TimeUnit.SECONDS)).isTrue();
      Awaits.until(DEADLINE, "the relay subscribed", () -> wakeup.subscribers() == 1);
      for (int i = 0; i < 10_000; i++) {
        wakeup.wake();
      }
      // The loop is in its 30 s back-off: the wakes are remembered (one flag), not claimed now.
      assertThat(claims.get()).isEqualTo(1);
      assertThat(wakeup.wakes()).isEqualTo(10_000);
    }
  }

  @Test
  @DisplayName("a wake during a claim that finds nothing makes the next claim start without the"
      + " idle pause")
  void wakeDuringCycle() throws Exception {
    InMemoryOutboxStore inner = new InMemoryOutboxStore();
    OutboxWakeup wakeup = OutboxWakeup.create();
    CountDownLatch inClaim = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger claims = new AtomicInteger();
    OutboxStore slowFirstClaim = new DelegatingStore(inner, wakeup) {
      @Override
      public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
          Instant now) {
        List<OutboxRecord> found = inner.claim(owner, max, maxRun, lease, now);
        if (claims.incrementAndGet() == 1) {
          inClaim.countDown();
          try {
            release.await(); // the commit below lands after this claim read the outbox
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return found;
      }
    };
    try (OutboxRelay relay = OutboxRelay.builder(slowFirstClaim, publisher,
        new InMemoryDeadLetterStore()).pollInterval(LONG_POLL).build()) {
      relay.start();
      assertThat(inClaim.await(5, TimeUnit.SECONDS)).isTrue();
      inner.append("orders", message(null, "during"));
      wakeup.wake(); // the relay is busy (not idle): only the flag is set
      release.countDown();
      Awaits.until(DEADLINE, "published by the next claim, not after 30 s",
          () -> published.size() == 1);
      assertThat(claims.get()).isGreaterThanOrEqualTo(2);
      assertThat(relay.wokenClaims()).isEqualTo(1);
    }
  }

  @Test
  @DisplayName("the wakeup tells its demand of the first and last subscriber, and is bounded")
  void demandAndBound() {
    List<String> events = new ArrayList<>();
    OutboxWakeup wakeup = OutboxWakeup.create(new OutboxWakeup.Demand() {
      @Override
      public void started() {
        events.add("started");
      }

      @Override
      public void stopped() {
        events.add("stopped");
      }
    });
    AtomicInteger runs = new AtomicInteger();
    List<OutboxWakeup.Subscription> subs = new ArrayList<>();
    for (int i = 0; i < OutboxWakeup.MAX_SUBSCRIBERS; i++) {
      subs.add(wakeup.subscribe(runs::incrementAndGet));
    }
    assertThatThrownBy(() -> wakeup.subscribe(runs::incrementAndGet))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("1024");
    wakeup.wake();
    assertThat(runs.get()).isEqualTo(OutboxWakeup.MAX_SUBSCRIBERS);
    subs.forEach(OutboxWakeup.Subscription::close);
    subs.get(0).close(); // idempotent
    assertThat(events).containsExactly("started", "stopped");
    assertThat(wakeup.subscribers()).isZero();
    assertThatThrownBy(() -> OutboxWakeup.create(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("demand");
  }

  @Test
  @DisplayName("a subscriber that throws neither fails the wake nor stops the others")
  void throwingSubscriber() {
    OutboxWakeup wakeup = OutboxWakeup.create();
    AtomicInteger runs = new AtomicInteger();
    wakeup.subscribe(() -> {
      throw new IllegalStateException("boom");
    });
    wakeup.subscribe(runs::incrementAndGet);
    wakeup.wake();
    assertThat(runs.get()).isEqualTo(1);
  }

  @Test
  @DisplayName("wakeup(null) makes a relay of a waking store poll only: it does not subscribe")
  void wakeupOff() {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    try (OutboxRelay relay = OutboxRelay.builder(store, publisher, new InMemoryDeadLetterStore())
        .pollInterval(LONG_POLL).wakeup(null).build()) {
      relay.start();
      assertThat(store.wakeup().orElseThrow().subscribers()).isZero();
    }
  }

  /** A store over an in-memory one with a wakeup of the test's. */
  private static class DelegatingStore implements OutboxStore {
    private final InMemoryOutboxStore inner;
    private final OutboxWakeup wakeup;

    DelegatingStore(InMemoryOutboxStore inner, OutboxWakeup wakeup) {
      this.inner = inner;
      this.wakeup = wakeup;
    }

    @Override
    public java.util.Optional<OutboxWakeup> wakeup() {
      return java.util.Optional.of(wakeup);
    }

    @Override
    public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
      return inner.claim(owner, max, lease, now);
    }

    @Override
    public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
        Instant now) {
      return inner.claim(owner, max, maxRun, lease, now);
    }

    @Override
    public int release(String owner, java.util.Collection<Long> sequences) {
      return inner.release(owner, sequences);
    }

    @Override
    public int markSent(String owner, java.util.Collection<Long> sequences, Instant now) {
      return inner.markSent(owner, sequences, now);
    }

    @Override
    public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
        Instant notBefore, String error) {
      return inner.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
    }

    @Override
    public boolean markDead(String owner, long sequence) {
      return inner.markDead(owner, sequence);
    }

    @Override
    public java.util.Set<Long> renewLease(String owner, java.util.Collection<Long> sequences,
        Duration lease, Instant now) {
      return inner.renewLease(owner, sequences, lease, now);
    }

    @Override
    public int purgeSent(Instant sentBefore) {
      return inner.purgeSent(sentBefore);
    }

    @Override
    public OutboxStats stats(Instant now) {
      return inner.stats(now);
    }
  }
}

package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.FailureClassifier;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class IdempotentHandlerTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryIdempotencyStore store =
      new InMemoryIdempotencyStore(clock, Duration.ofHours(1));
  private final AtomicInteger runs = new AtomicInteger();

  private static Message order(String orderId) {
    return Message.builder().type("order.paid").key(orderId).payload("{}").build();
  }

  private static String businessKey(Message m) {
    return m.key().orElse("") + ":sms";
  }

  private IdempotentHandler handler(io.relaykit.message.MessageHandler delegate) {
    return new IdempotentHandler(store, IdempotentHandlerTest::businessKey, Duration.ofMinutes(1),
        delegate);
  }

  @Nested
  @DisplayName("claim, run, complete")
  class Flow {

    @Test
    @DisplayName("the first delivery runs the handler and marks the business key DONE")
    void firstRuns() throws Exception {
      handler(d -> runs.incrementAndGet()).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a redelivery, even as a new message with a new id, returns normally without"
        + " running the handler")
    void doneSkips() throws Exception {
      IdempotentHandler h = handler(d -> runs.incrementAndGet());
      h.handle(Delivery.first(order("o-1"), "orders"));

      h.handle(Delivery.first(order("o-1"), "orders"));
      h.handle(new Delivery(order("o-1"), "orders", 3, clock.instant()));

      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("a failing handler releases the key and rethrows, so the retry runs the work")
    void failureReleases() throws Exception {
      IOException boom = new IOException("smtp down");
      IdempotentHandler failing = handler(d -> {
        runs.incrementAndGet();
        throw boom;
      });

      assertThatThrownBy(() -> failing.handle(Delivery.first(order("o-1"), "orders")))
          .isSameAs(boom);
      assertThat(store.status("o-1:sms")).isEmpty();

      handler(d -> runs.incrementAndGet()).handle(Delivery.first(order("o-1"), "orders"));
      assertThat(runs).hasValue(2);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("an Error from the handler releases the key too")
    void errorReleases() {
      IdempotentHandler failing = handler(d -> {
        throw new AssertionError("bug");
      });

      assertThatThrownBy(() -> failing.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(AssertionError.class).hasMessage("bug");
      assertThat(store.status("o-1:sms")).isEmpty();
    }

    @Test
    @DisplayName("a key held by another delivery is claimed again with back-off, then throws a"
        + " retryable WorkInProgressException without running the handler or acking")
    void inProgressIsRetryable() {
      Claim other = store.claim("o-1:sms", Duration.ofMinutes(1));
      List<Duration> pauses = new ArrayList<>();
      IdempotentHandler h = IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey,
              Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .inProgressRetries(3, Backoff.exponential(Duration.ofMillis(100)))
          .pause(d -> {
            pauses.add(d);
            clock.advance(d);
          })
          .build();

      assertThatThrownBy(() -> h.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(WorkInProgressException.class)
          .hasMessageContaining("o-1:sms")
          .hasMessageContaining("3 retries");
      assertThat(pauses).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200),
          Duration.ofMillis(400));
      assertThat(runs).hasValue(0);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
      assertThat(RetryPolicy.defaults().isPermanent(new WorkInProgressException("x"))).isFalse();
      assertThat(FailureClassifier.defaults().classify(new WorkInProgressException("x")))
          .isEqualTo(FailureClassifier.Kind.RETRYABLE);
      assertThat(store.complete(other)).isTrue();
    }

    @Test
    @DisplayName("with zero retries an IN_PROGRESS key fails at once, without pausing")
    void zeroRetries() {
      store.claim("o-1:sms", Duration.ofMinutes(1));
      IdempotentHandler h = IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey,
              Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .inProgressRetries(0, Backoff.fixed(Duration.ofSeconds(1)))
          .pause(d -> {
            throw new AssertionError("must not pause");
          })
          .build();

      assertThatThrownBy(() -> h.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(WorkInProgressException.class);
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("a holder that releases while this delivery waits lets it run the work")
    void holderReleasesWhileWaiting() throws Exception {
      Claim other = store.claim("o-1:sms", Duration.ofMinutes(1));
      IdempotentHandler h = IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey,
              Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .pause(d -> {
            clock.advance(d);
            store.release(other);
          })
          .build();

      h.handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a holder that completes while this delivery waits makes it ack without running")
    void holderCompletesWhileWaiting() throws Exception {
      Claim other = store.claim("o-1:sms", Duration.ofMinutes(1));
      IdempotentHandler h = IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey,
              Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .pause(d -> {
            clock.advance(d);
            store.complete(other);
          })
          .build();

      h.handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(0);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("an interrupt while waiting fails the delivery retryably and keeps the flag")
    void interruptedWhileWaiting() {
      store.claim("o-1:sms", Duration.ofMinutes(1));
      IdempotentHandler h = IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey,
              Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .pause(d -> {
            throw new InterruptedException("shutdown");
          })
          .build();

      try {
        assertThatThrownBy(() -> h.handle(Delivery.first(order("o-1"), "orders")))
            .isInstanceOf(WorkInProgressException.class)
            .hasCauseInstanceOf(InterruptedException.class);
        assertThat(Thread.currentThread().isInterrupted()).isTrue();
      } finally {
        Thread.interrupted();
      }
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("if the lease lapsed and was taken over while the handler ran, the delivery is"
        + " still acknowledged and the new holder keeps the key")
    void takeoverDuringHandler() throws Exception {
      Claim[] taker = new Claim[1];
      handler(d -> {
        clock.advance(Duration.ofMinutes(2));
        taker[0] = store.claim("o-1:sms", Duration.ofMinutes(1));
      }).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(taker[0].isClaimed()).isTrue();
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
    }
  }

  /** A heartbeat scheduler the test steps by hand: {@link #beat} runs every live task once. */
  private static final class ManualScheduler implements IdempotentHandler.Scheduler {
    final List<Duration> periods = new ArrayList<>();
    final List<Runnable> live = new ArrayList<>();
    int cancelled;

    @Override
    public synchronized Runnable every(Duration period, Runnable beat) {
      periods.add(period);
      live.add(beat);
      return () -> {
        synchronized (this) {
          if (live.remove(beat)) {
            cancelled++;
          }
        }
      };
    }

    void beat() {
      List<Runnable> now;
      synchronized (this) {
        now = new ArrayList<>(live);
      }
      now.forEach(Runnable::run);
    }
  }

  @Nested
  @DisplayName("long handlers")
  class LongHandlers {

    private final Duration lease = Duration.ofMinutes(1);
    private final ManualScheduler scheduler = new ManualScheduler();

    private IdempotentHandler withHeartbeat(io.relaykit.message.MessageHandler delegate) {
      return IdempotentHandler.builder(store, IdempotentHandlerTest::businessKey, lease, delegate)
          .heartbeat(Duration.ofSeconds(20), scheduler)
          .build();
    }

    @Test
    @DisplayName("a handler that outlasts its lease with nobody else around still completes the"
        + " key: a redelivery does not run the effect again")
    void outlastsLeaseAlone() throws Exception {
      IdempotentHandler h = handler(d -> {
        runs.incrementAndGet();
        clock.advance(Duration.ofMinutes(3));
      });

      h.handle(Delivery.first(order("o-1"), "orders"));
      h.handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("the heartbeat renews the lease while the handler runs, so nobody takes the key"
        + " over, and stops when the handler is done")
    void heartbeatKeepsLease() throws Exception {
      Claim[] rival = new Claim[1];
      withHeartbeat(d -> {
        runs.incrementAndGet();
        for (int i = 0; i < 9; i++) {   // 3 minutes in all, beating every 20 s
          clock.advance(Duration.ofSeconds(20));
          scheduler.beat();
        }
        rival[0] = store.claim("o-1:sms", lease);
      }).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(rival[0].status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(scheduler.periods).containsExactly(Duration.ofSeconds(20));
      assertThat(scheduler.live).isEmpty();
      assertThat(scheduler.cancelled).isEqualTo(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("a failing handler stops its heartbeat and releases the key")
    void heartbeatStopsOnFailure() {
      assertThatThrownBy(() -> withHeartbeat(d -> {
        throw new IOException("smtp down");
      }).handle(Delivery.first(order("o-1"), "orders"))).hasMessage("smtp down");

      assertThat(scheduler.live).isEmpty();
      assertThat(store.status("o-1:sms")).isEmpty();
    }

    @Test
    @DisplayName("a heartbeat that finds the key taken over stops; the delivery is acked and the"
        + " new holder keeps the key")
    void heartbeatFindsTakeover() throws Exception {
      Claim[] taker = new Claim[1];
      withHeartbeat(d -> {
        clock.advance(lease.plusSeconds(1));   // stalled past the lease: no beat ran
        taker[0] = store.claim("o-1:sms", lease);
        scheduler.beat();
        assertThat(scheduler.live).as("stopped after the failed renewal").isEmpty();
      }).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(taker[0].isClaimed()).isTrue();
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(taker[0])).isTrue();
    }

    @Test
    @DisplayName("a heartbeat whose store fails keeps beating; the next renewal holds the lease")
    void heartbeatSurvivesStoreFailure() throws Exception {
      io.relaykit.tck.SwitchableIdempotencyStore flaky =
          new io.relaykit.tck.SwitchableIdempotencyStore(store, "flaky");
      Claim[] rival = new Claim[1];
      IdempotentHandler.builder(flaky, IdempotentHandlerTest::businessKey, lease, d -> {
        clock.advance(Duration.ofSeconds(20));
        flaky.down(true);
        scheduler.beat();
        flaky.down(false);
        clock.advance(Duration.ofSeconds(20));
        scheduler.beat();
        clock.advance(Duration.ofSeconds(40));
        rival[0] = store.claim("o-1:sms", lease);
      }).heartbeat(Duration.ofSeconds(20), scheduler).build()
          .handle(Delivery.first(order("o-1"), "orders"));

      assertThat(rival[0].status()).isEqualTo(Claim.Status.IN_PROGRESS);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a heartbeat period must be positive and shorter than the lease")
    void heartbeatChecks() {
      IdempotentHandler.Builder b = IdempotentHandler.builder(store, m -> "k", lease, d -> { });
      assertThatThrownBy(() -> b.heartbeat(lease, scheduler))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shorter");
      assertThatThrownBy(() -> b.heartbeat(Duration.ZERO, scheduler))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat");
      assertThatThrownBy(() -> b.heartbeat(Duration.ofSeconds(1), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scheduler");
    }

    @Test
    @DisplayName("Scheduler.of beats on a real executor and the handle cancels it")
    void executorScheduler() {
      java.util.concurrent.ScheduledExecutorService ex =
          java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
      try {
        AtomicInteger beats = new AtomicInteger();
        Runnable cancel = IdempotentHandler.Scheduler.of(ex)
            .every(Duration.ofMillis(5), beats::incrementAndGet);
        io.relaykit.tck.Await.until(Duration.ofSeconds(10), "two beats", () -> beats.get() >= 2);
        cancel.run();
        int after = beats.get();
        // Once cancelled, no new beat starts; one already running may still finish.
        ex.shutdown();
        assertThat(beats.get()).isLessThanOrEqualTo(after + 1);
      } finally {
        ex.shutdownNow();
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a message without a business key is a permanent MalformedMessageException")
    void noBusinessKey() {
      IdempotentHandler h = new IdempotentHandler(store, m -> m.key().orElse(null),
          Duration.ofMinutes(1), d -> runs.incrementAndGet());
      Message keyless = Message.builder().type("t").payload("{}").build();

      assertThatThrownBy(() -> h.handle(Delivery.first(keyless, "orders")))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining(keyless.id())
          .hasMessageContaining("business key");
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("an oversize business key is a permanent MalformedMessageException")
    void oversizeBusinessKey() {
      IdempotentHandler h = new IdempotentHandler(store, m -> "k".repeat(600),
          Duration.ofMinutes(1), d -> runs.incrementAndGet());

      assertThatThrownBy(() -> h.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(MalformedMessageException.class).hasMessageContaining("600 characters");
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("the builder names a bad retry count, a null back-off and a null pause")
    void builderChecks() {
      IdempotentHandler.Builder b = IdempotentHandler.builder(store, m -> "k",
          Duration.ofMinutes(1), d -> { });
      assertThatThrownBy(() -> b.inProgressRetries(-1, Backoff.fixed(Duration.ofSeconds(1))))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inProgressRetries");
      assertThatThrownBy(() -> b.inProgressRetries(101, Backoff.fixed(Duration.ofSeconds(1))))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("101");
      assertThatThrownBy(() -> b.inProgressRetries(1, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("backoff");
      assertThatThrownBy(() -> b.pause(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pause");
    }

    @Test
    @DisplayName("the constructor names a null argument and a non-positive lease")
    void constructorChecks() {
      assertThatThrownBy(() -> new IdempotentHandler(null, m -> "k", Duration.ofMinutes(1),
          d -> { })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("store");
      assertThatThrownBy(() -> new IdempotentHandler(store, null, Duration.ofMinutes(1),
          d -> { })).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("businessKey");
      assertThatThrownBy(() -> new IdempotentHandler(store, m -> "k", Duration.ZERO, d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      assertThatThrownBy(() -> new IdempotentHandler(store, m -> "k", Duration.ofMinutes(1),
          null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("delegate");
    }
  }

  @Nested
  @DisplayName("a complete that fails after the effect ran")
  class CompleteFails {

    private final io.relaykit.tck.SwitchableIdempotencyStore switchable =
        new io.relaykit.tck.SwitchableIdempotencyStore(store, "test");
    private final List<Duration> pauses = new java.util.ArrayList<>();

    private IdempotentHandler handlerDownFor(Duration outage) {
      return IdempotentHandler.builder(switchable, IdempotentHandlerTest::businessKey,
          Duration.ofMinutes(1), d -> {
            runs.incrementAndGet();
            switchable.down(true);
          }).pause(d -> {
            pauses.add(d);
            clock.advance(d);
            if (pauses.stream().reduce(Duration.ZERO, Duration::plus).compareTo(outage) >= 0) {
              switchable.down(false);
            }
          }).build();
    }

    @Test
    @DisplayName("the store unreachable for 2 s: complete is retried with back-off, the key ends"
        + " DONE, and a redelivery after the lease does not run the effect again")
    void retriedThroughOutage() throws Exception {
      handlerDownFor(Duration.ofSeconds(2)).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
      assertThat(pauses).first().isEqualTo(Duration.ofMillis(200));
      clock.advance(Duration.ofMinutes(2));
      handler(d -> runs.incrementAndGet()).handle(Delivery.first(order("o-1"), "orders"));
      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("a complete that committed but lost its reply: the repeat answers false, the key"
        + " reads DONE, and no takeover is reported")
    void lostReply() throws Exception {
      io.relaykit.tck.LostReply<IdempotencyStore> seam = io.relaykit.tck.LostReply
          .over(IdempotencyStore.class, store).dropNextReplyOf("complete");
      IdempotentHandler h = IdempotentHandler.builder(seam.store(),
          IdempotentHandlerTest::businessKey, Duration.ofMinutes(1), d -> runs.incrementAndGet())
          .pause(pauses::add).build();

      h.handle(Delivery.first(order("o-1"), "orders"));

      assertThat(seam.dropped()).isEqualTo(1);
      assertThat(pauses).hasSize(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a store down past every retry: the delivery is still acknowledged (the effect"
        + " ran), after 6 attempts; the key stays claimed until its lease lapses")
    void givesUp() throws Exception {
      handlerDownFor(Duration.ofDays(1)).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(1);
      assertThat(pauses).hasSize(IdempotentHandler.DEFAULT_COMPLETE_RETRIES);
      switchable.down(false);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("the lease lapses during the complete retries and another worker claims the key:"
        + " the old holder's retried complete is fenced off by its token and leaves the new claim"
        + " open; the new holder completes it")
    void retryAfterTakeoverIsFenced() throws Exception {
      Claim[] theirs = new Claim[1];
      IdempotentHandler h = IdempotentHandler.builder(switchable,
          IdempotentHandlerTest::businessKey, Duration.ofSeconds(1), d -> {
            runs.incrementAndGet();
            switchable.down(true);
          }).pause(d -> {
            pauses.add(d);
            clock.advance(d.plusSeconds(1));
            if (theirs[0] == null) {
              // Back after the old lease lapsed: another worker claims the key first.
              switchable.down(false);
              theirs[0] = store.claim("o-1:sms", Duration.ofMinutes(1));
            }
          }).build();

      h.handle(Delivery.first(order("o-1"), "orders"));

      assertThat(theirs[0].isClaimed()).as("the other worker's claim").isTrue();
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
      assertThat(store.complete(theirs[0])).isTrue();
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("completeRetries rejects a negative count, one above 100 and a null back-off")
    void builderChecks() {
      IdempotentHandler.Builder b = IdempotentHandler.builder(store,
          IdempotentHandlerTest::businessKey, Duration.ofMinutes(1), d -> { });
      assertThatThrownBy(() -> b.completeRetries(-1, IdempotentHandler.DEFAULT_COMPLETE_BACKOFF))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("completeRetries");
      assertThatThrownBy(() -> b.completeRetries(101, IdempotentHandler.DEFAULT_COMPLETE_BACKOFF))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("completeRetries");
      assertThatThrownBy(() -> b.completeRetries(1, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("backoff");
    }
  }
}

package io.relaykit.inprocess;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.ForwardingDeadLetterStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the in-process transport adds to the Publisher and Subscriber kits. */
class InProcessTransportTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private final FakeClock clock = new FakeClock();
  private final LifecycleLog log = new LifecycleLog(10_000);
  private InProcessTransport transport = InProcessTransport.builder()
      .clock(clock).listener(log).closeTimeout(Duration.ofSeconds(5)).build();

  @AfterEach
  void close() {
    transport.close();
  }

  private static SubscriptionSpec.Builder spec(String group) {
    return SubscriptionSpec.builder("orders", group).concurrency(2).maxInFlight(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(20))).build());
  }

  private Message message(String key) {
    return Message.builder().type("order.paid").key(key).payload("{}").createdAt(clock.instant())
        .build();
  }

  private List<Stage> stages(Message m) {
    return log.trace(m.traceId()).stream().map(LifecycleEvent::stage).toList();
  }

  @Nested
  @DisplayName("lifecycle events")
  class Events {

    @Test
    @DisplayName("a handled message is PUBLISHED, CONFIRMED, DELIVERED and ACKED, under its trace id,"
        + " at the injected clock's time")
    void happyPath() {
      transport.subscribe(spec("g").build(), d -> { });
      Message m = message("k");

      PublishReceipt receipt = transport.publish("orders", m).join();

      Await.until(WAIT, "ACKED", () -> stages(m).contains(Stage.ACKED));
      assertThat(stages(m)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED, Stage.DELIVERED,
          Stage.ACKED);
      assertThat(log.trace(m.traceId())).allSatisfy(e -> {
        assertThat(e.messageId()).isEqualTo(m.id());
        assertThat(e.where()).isEqualTo("orders");
        assertThat(e.at()).isEqualTo(clock.instant());
      });
      assertThat(receipt.position()).isEqualTo("orders@0");
      assertThat(log.trace(m.traceId()).get(1).detail()).isEqualTo("orders@0");
    }

    @Test
    @DisplayName("a failing message is RETRIED, then DEAD_LETTERED with the reason")
    void failurePath() {
      transport.subscribe(spec("g").build(), d -> {
        throw new IllegalStateException("nope");
      });
      Message m = message("k");

      transport.publish("orders", m).join();

      Await.until(WAIT, "DEAD_LETTERED", () -> stages(m).contains(Stage.DEAD_LETTERED));
      assertThat(stages(m)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED,
          Stage.DELIVERED, Stage.RETRIED, Stage.DELIVERED, Stage.RETRIED, Stage.DELIVERED,
          Stage.DEAD_LETTERED);
      assertThat(log.trace(m.traceId()).get(7).detail()).contains("attempts exhausted (3 of 3)");
    }

    @Test
    @DisplayName("a listener that throws does not stop delivery")
    void brokenListener() {
      transport.close();
      transport = InProcessTransport.builder().listener(e -> {
        throw new IllegalStateException("broken listener");
      }).build();
      AtomicInteger handled = new AtomicInteger();
      transport.subscribe(spec("g").build(), d -> handled.incrementAndGet());

      transport.publish("orders", message("k")).join();

      Await.until(WAIT, "delivery despite the listener", () -> handled.get() == 1);
    }
  }

  @Nested
  @DisplayName("expiry on the injected clock")
  class Expiry {

    @Test
    @DisplayName("a message whose expiry passed before delivery is reported EXPIRED and never"
        + " handled; the next message of its key is")
    void expiredBeforeDelivery() {
      Message code = Message.builder().type("sms.code").key("k").payload("123456")
          .createdAt(clock.instant()).expiresAt(clock.instant().plusSeconds(300)).build();
      Message later = message("k");
      transport.publish("orders", code).join();
      transport.publish("orders", later).join();
      clock.advance(Duration.ofSeconds(300));
      List<String> handled = new CopyOnWriteArrayList<>();

      transport.subscribe(spec("g").ordering(OrderingMode.KEY).build(),
          d -> handled.add(d.message().id()));

      Await.until(WAIT, "the later message", () -> handled.contains(later.id()));
      assertThat(handled).containsExactly(later.id());
      assertThat(stages(code)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED, Stage.EXPIRED);
    }

    @Test
    @DisplayName("a message that expires while waiting for its retry is not tried again")
    void expiresDuringRetry() {
      Message code = Message.builder().type("sms.code").key("k").payload("123456")
          .createdAt(clock.instant()).expiresAt(clock.instant().plusSeconds(300)).build();
      AtomicInteger attempts = new AtomicInteger();
      transport.subscribe(spec("g").build(), d -> {
        attempts.incrementAndGet();
        clock.advance(Duration.ofSeconds(301));
        throw new IllegalStateException("gateway down");
      });

      transport.publish("orders", code).join();

      Await.until(WAIT, "EXPIRED", () -> stages(code).contains(Stage.EXPIRED));
      assertThat(attempts).hasValue(1);
      assertThat(transport.deadLetters().list(
          DeadLetterQuery.all().withMessageId(code.id()))).isEmpty();
    }
  }

  @Nested
  @DisplayName("dead letters")
  class DeadLetters {

    @Test
    @DisplayName("failure times in the dead letter come from the injected clock")
    void failureTimes() {
      transport.subscribe(spec("g").build(), d -> {
        clock.advance(Duration.ofSeconds(10));
        throw new IllegalStateException("attempt " + d.attempt());
      });
      Message m = message("k");

      transport.publish("orders", m).join();

      DeadLetter d = Await.value(WAIT, "dead letter",
          () -> transport.deadLetters().list(DeadLetterQuery.all()
              .withMessageId(m.id())).stream().findFirst().orElse(null), x -> x != null);
      assertThat(d.firstFailureAt()).isEqualTo(FakeClock.EPOCH.plusSeconds(10));
      assertThat(d.lastFailureAt()).isEqualTo(FakeClock.EPOCH.plusSeconds(30));
      assertThat(d.exceptionMessage()).isEqualTo("attempt 3");
      assertThat(d.attempts()).isEqualTo(3);
    }

    @Test
    @DisplayName("if the dead-letter store fails, the message is not lost: its last attempt runs"
        + " again and the dead letter is stored on a later try")
    void storeFailureLosesNothing() {
      AtomicInteger adds = new AtomicInteger();
      InMemoryDeadLetterStore real = new InMemoryDeadLetterStore();
      DeadLetterStore flaky = new ForwardingDeadLetterStore(real) {
        @Override
        public void add(DeadLetter deadLetter) {
          if (adds.incrementAndGet() == 1) {
            throw new IllegalStateException("dead-letter database down");
          }
          super.add(deadLetter);
        }
      };
      transport.close();
      transport = InProcessTransport.builder().deadLetters(flaky).listener(log).build();
      AtomicInteger attempts = new AtomicInteger();
      transport.subscribe(spec("g").build(), d -> {
        attempts.incrementAndGet();
        throw new IllegalStateException("nope");
      });
      Message m = message("k");

      transport.publish("orders", m).join();

      Await.until(WAIT, "the dead letter stored", () -> !real.list(
          DeadLetterQuery.all().withMessageId(m.id())).isEmpty());
      assertThat(adds).hasValue(2);
      assertThat(attempts).hasValue(4);
      assertThat(transport.deadLetters()).isSameAs(flaky);
    }
  }

  @Nested
  @DisplayName("groups and retention")
  class Groups {

    @Test
    @DisplayName("messages published before any group exists are delivered to the first group")
    void heldUntilFirstGroup() {
      Message m1 = message("a");
      Message m2 = message("b");
      transport.publish("orders", m1).join();
      transport.publish("orders", m2).join();
      List<String> handled = new CopyOnWriteArrayList<>();

      transport.subscribe(spec("g").build(), d -> handled.add(d.message().id()));

      Await.until(WAIT, "both", () -> handled.size() == 2);
      assertThat(handled).containsExactlyInAnyOrder(m1.id(), m2.id());
    }

    @Test
    @DisplayName("a group whose members all closed keeps its place: a new member continues after"
        + " what was acknowledged")
    void groupKeepsPosition() throws Exception {
      List<String> first = new CopyOnWriteArrayList<>();
      Subscription s = transport.subscribe(spec("g").build(), d -> first.add(d.message().id()));
      Message m1 = message("a");
      transport.publish("orders", m1).join();
      Await.until(WAIT, "m1", () -> first.size() == 1);
      assertThat(s.close(WAIT)).isTrue();
      Message m2 = message("b");
      transport.publish("orders", m2).join();
      List<String> second = new CopyOnWriteArrayList<>();

      transport.subscribe(spec("g").build(), d -> second.add(d.message().id()));

      Await.until(WAIT, "m2", () -> second.size() == 1);
      assertThat(second).containsExactly(m2.id());
    }

    @Test
    @DisplayName("members of one group must agree on the ordering mode")
    void orderingMismatch() {
      transport.subscribe(spec("g").ordering(OrderingMode.KEY).build(), d -> { });

      assertThatThrownBy(() -> transport.subscribe(spec("g").ordering(OrderingMode.UNORDERED)
          .build(), d -> { }))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ordering KEY")
          .hasMessageContaining("UNORDERED");
    }
  }

  @Nested
  @DisplayName("close")
  class Close {

    @Test
    @DisplayName("closing the transport drains running handlers, then rejects publishes and"
        + " subscriptions")
    void transportClose() throws Exception {
      CountDownLatch started = new CountDownLatch(1);
      AtomicInteger finished = new AtomicInteger();
      Subscription s = transport.subscribe(spec("g").build(), d -> {
        started.countDown();
        Await.until(WAIT, "the transport to begin closing", () -> !isOpen());
        finished.incrementAndGet();
      });
      transport.publish("orders", message("k")).join();
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

      transport.close();

      assertThat(finished).hasValue(1);
      assertThat(s.isRunning()).isFalse();
      assertThat(transport.publish("orders", message("k")))
          .failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class)
          .withCauseInstanceOf(PublishException.class);
      assertThatThrownBy(() -> transport.subscribe(spec("g2").build(), d -> { }))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    private boolean isOpen() {
      try {
        return !transport.publish("probe", message("p")).isCompletedExceptionally();
      } catch (RuntimeException e) {
        return false;
      }
    }
  }

  @Nested
  @DisplayName("under load")
  class Load {

    @Test
    @DisplayName("600 messages on 20 keys with failures on 2 members: each ends ACKED or"
        + " DEAD_LETTERED exactly once, keys never overlap, and each key finishes in order")
    void randomFailures() {
      transport.close();
      transport = InProcessTransport.builder().listener(log).build();
      Map<String, AtomicInteger> active = new ConcurrentHashMap<>();
      Map<String, List<Integer>> finishedByKey = new ConcurrentHashMap<>();
      AtomicBoolean overlap = new AtomicBoolean();
      MessageHandler handler = d -> {
        String key = d.message().key().orElseThrow();
        AtomicInteger a = active.computeIfAbsent(key, k -> new AtomicInteger());
        if (a.incrementAndGet() > 1) {
          overlap.set(true);
        }
        try {
          int n = Integer.parseInt(d.message().headers().get("n"));
          // Deterministic failures: every 3rd message fails its first attempt, every 10th always.
          if (n % 10 == 0 || (n % 3 == 0 && d.attempt() == 1)) {
            throw new IllegalStateException("fail " + n + " attempt " + d.attempt());
          }
          finishedByKey.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(n);
        } finally {
          a.decrementAndGet();
        }
      };
      SubscriptionSpec spec = SubscriptionSpec.builder("orders", "g").ordering(OrderingMode.KEY)
          .concurrency(4).maxInFlight(16).retryPolicy(RetryPolicy.builder().maxAttempts(3)
              .backoff(Backoff.fixed(Duration.ofMillis(1))).build()).build();
      transport.subscribe(spec, handler);
      transport.subscribe(spec, handler);
      List<Message> sent = new ArrayList<>();
      for (int n = 0; n < 600; n++) {
        Message m = Message.builder().type("t").key("key-" + (n % 20)).payload("{}")
            .header("n", Integer.toString(n)).build();
        sent.add(m);
        transport.publish("orders", m).join();
      }

      Await.until(Duration.ofSeconds(60), "every message finished", () -> sent.stream()
          .map(InProcessTransportTest.this::stages)
          .allMatch(st -> st.contains(Stage.ACKED) || st.contains(Stage.DEAD_LETTERED)));

      assertThat(overlap).as("two messages of one key ran at once").isFalse();
      for (Message m : sent) {
        int n = Integer.parseInt(m.headers().get("n"));
        List<Stage> stages = stages(m);
        Stage expected = n % 10 == 0 ? Stage.DEAD_LETTERED : Stage.ACKED;
        assertThat(stages).as("message %d", n).containsOnlyOnce(expected)
            .doesNotContain(expected == Stage.ACKED ? Stage.DEAD_LETTERED : Stage.ACKED);
      }
      assertThat(transport.deadLetters().count(DeadLetterQuery.all())).isEqualTo(60);
      for (List<Integer> finished : finishedByKey.values()) {
        assertThat(finished).isSorted();
      }
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("the builder names a null clock or listener and a non-positive close timeout")
    void builderChecks() {
      assertThatThrownBy(() -> InProcessTransport.builder().clock(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
      assertThatThrownBy(() -> InProcessTransport.builder().listener(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("listener");
      assertThatThrownBy(() -> InProcessTransport.builder().closeTimeout(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("closeTimeout");
    }

    @Test
    @DisplayName("defaults: an in-memory dead-letter store and a working transport")
    void defaults() {
      try (InProcessTransport t = InProcessTransport.create()) {
        assertThat(t.deadLetters()).isInstanceOf(InMemoryDeadLetterStore.class);
        assertThat(t.publish("orders", message("k"))).isCompleted();
      }
    }
  }
}

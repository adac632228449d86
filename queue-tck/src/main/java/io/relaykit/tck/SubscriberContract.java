package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.FailureRoute;
import io.relaykit.message.Delivery;
import io.relaykit.message.HandlerThreads;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.trace.TraceContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link Subscriber} keeps, driven through a {@link Publisher} of the same
 * transport: at-least-once delivery, ack only after success, retries then dead letters with full
 * details, KEY and PARTITION order under concurrency, the concurrency and in-flight bounds, and a
 * draining close. Subclass it and implement the factories and {@link #awaitDeadLetter}.
 *
 * <p>The kit subscribes before it publishes (a RabbitMQ group queue must exist to receive), so a
 * Kafka subscriber should start new groups at the earliest offset, and may wait for its partition
 * assignment in {@link #awaitAssigned}. Message times are real time: the subscriber's clock must be
 * near this JVM's. Some cases hold a handler and check that something does not happen for {@link
 * #quietWindow()} (an absence cannot be awaited); the rest wait for conditions with {@link Await}.
 */
public abstract class SubscriberContract {

  /** For a subclass that binds the kit to one backend. */
  protected SubscriberContract() {}

  private Subscriber subscriber;
  private Publisher publisher;
  private final List<Subscription> opened = new CopyOnWriteArrayList<>();
  /** Released in {@link #closeAll()} so no handler of the kit outlives its test. */
  private final CountDownLatch testOver = new CountDownLatch(1);

  /**
   * A new subscriber; called before each test, and the kit closes it after.
   *
   * @return an open subscriber
   */
  protected abstract Subscriber createSubscriber();

  /**
   * A publisher to the same transport; the kit closes it after each test (after the subscriber).
   *
   * @return an open publisher
   */
  protected abstract Publisher createPublisher();

  /**
   * A destination no other test uses, ready to publish to and subscribe to. Give it one partition
   * where the transport has partitions: the PARTITION case checks publish order across keys.
   *
   * @return the destination's name
   */
  protected abstract String newDestination();

  /**
   * Waits up to {@code timeout} for the dead letter of {@code messageId} consumed from {@code
   * destination} (from the subscriber's dead-letter store or dead-letter topic) and returns it;
   * fails (AssertionError) if it does not arrive.
   *
   * @param destination the destination the message was consumed from
   * @param messageId the dead-lettered message's id
   * @param timeout how long to wait at most
   * @return the dead letter
   */
  protected abstract DeadLetter awaitDeadLetter(String destination, String messageId,
      Duration timeout);

  /**
   * Returns once {@code subscription} will receive what is published next. Default: at once.
   *
   * @param subscription the subscription just started
   * @param spec the spec it was started with
   */
  protected void awaitAssigned(Subscription subscription, SubscriptionSpec spec) {
  }

  /**
   * How long deliveries, retries and dead letters may take.
   *
   * @return 30 s by default
   */
  protected Duration timeout() {
    return Duration.ofSeconds(30);
  }

  /**
   * The delay between attempts in the kit's retry policy.
   *
   * @return 100 ms by default
   */
  protected Duration retryDelay() {
    return Duration.ofMillis(100);
  }

  /**
   * How long the kit watches for something that must not happen; each such case takes at least
   * this long.
   *
   * @return 300 ms by default
   */
  protected Duration quietWindow() {
    return Duration.ofMillis(300);
  }

  /**
   * Whether, in KEY mode, a message waiting for a retry holds back the later messages of its key
   * (as {@link OrderingMode#KEY} documents). A transport whose retries leave the key's order (a
   * Kafka retry topic) returns false and documents it; the case then does not apply.
   *
   * @return true (the default) to check that a key waits behind its retry
   */
  protected boolean holdsKeyBehindRetry() {
    return true;
  }

  /**
   * Whether the subscriber offers {@link OrderingMode#PARTITION}. A transport that cannot (a Kafka
   * share group spreads each partition over its members) returns false; the PARTITION case then
   * checks that subscribing with it fails with an IllegalArgumentException naming PARTITION.
   *
   * @return true (the default) to check partition order
   */
  protected boolean supportsPartitionOrder() {
    return true;
  }

  /**
   * The dead-letter store that holds what a subscription of {@code group} on {@code destination}
   * dead-letters, to read from; the kit closes it after use when it is {@link AutoCloseable}.
   * Null (the default) when the kit subclass offers none: the "dead letters read many times" case
   * then does not apply.
   *
   * @param destination the consumed destination
   * @param group the consumer group
   * @return a store to read that group's dead letters from, or null for none
   */
  protected DeadLetterStore deadLetterStore(String destination, String group) {
    return null;
  }

  /**
   * Whether a retry that is not yet due survives a close and a new subscription of the same group
   * (Kafka: the retry topic; RabbitMQ: the delay queue). The in-process transport keeps nothing
   * across a restart and returns false; the "restart before a retry is due" case then does not
   * apply.
   *
   * @return true (the default) to check that a pending retry survives a restart
   */
  protected boolean keepsRetriesAcrossRestart() {
    return true;
  }

  /**
   * Called in "restart before a retry is due" once the first attempt failed, before the
   * subscription closes: returns when the retry is durably scheduled (Kafka: the source committed
   * past the message). Default: at once.
   *
   * @param destination the consumed destination
   * @param spec the spec of the subscription about to close
   */
  protected void afterFirstFailure(String destination, SubscriptionSpec spec) {
  }

  /**
   * Whether this kit subclass can write a record as it stands on the wire ({@link #publishRaw}):
   * the cases on bad relaykit headers and on foreign messages with a mapped key run only then.
   *
   * @return false by default
   */
  protected boolean writesRawRecords() {
    return false;
  }

  /**
   * Writes one record to {@code destination} exactly as given, bypassing relaykit's publisher (a
   * plain producer, another framework, a tampered copy). Called only when {@link
   * #writesRawRecords()}.
   *
   * @param destination where to write
   * @param transportKey the transport's key (Kafka record key, AMQP routing key), or null
   * @param body the body
   * @param headers the headers, in order
   */
  protected void publishRaw(String destination, String transportKey, byte[] body,
      Map<String, String> headers) {
    throw new UnsupportedOperationException("writesRawRecords() is false");
  }

  @BeforeEach
  void createFresh() {
    subscriber = createSubscriber();
    publisher = createPublisher();
  }

  @AfterEach
  void closeAll() {
    testOver.countDown();
    for (Subscription s : opened) {
      s.close(Duration.ofSeconds(5));
    }
    subscriber.close();
    publisher.close();
    assertThat(wrongThreads).as("handlers that ran on another kind of thread than their"
        + " subscription's handlerThreads").isEmpty();
  }

  /**
   * The kind of thread the kit's subscriptions ask for ({@link #spec}). A subclass returns {@link
   * HandlerThreads#VIRTUAL} to run the whole contract on virtual threads; after every test the
   * kit fails if any handler ran on another kind of thread than its subscription asked for.
   *
   * @return {@link HandlerThreads#PLATFORM} by default
   */
  protected HandlerThreads handlerThreads() {
    return HandlerThreads.PLATFORM;
  }

  /** Whether {@code t} is a virtual thread ({@code Thread.isVirtual()}, Java 21+; else false). */
  private static boolean isVirtual(Thread t) {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (Boolean) IS_VIRTUAL.invoke(t);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("Thread.isVirtual failed", e);
    }
  }

  private static final java.lang.reflect.Method IS_VIRTUAL = isVirtualMethod();

  private static java.lang.reflect.Method isVirtualMethod() {
    try {
      return Thread.class.getMethod("isVirtual");
    } catch (NoSuchMethodException e) {
      return null; // Java 17-20
    }
  }

  /** Threads a handler ran on against its spec's handlerThreads: a few names at most. */
  private final Set<String> wrongThreads = ConcurrentHashMap.newKeySet();

  /**
   * The kit's defaults: 3 attempts {@link #retryDelay()} apart, 10 s handler timeout, 4 workers,
   * at most 16 messages in flight, {@link #handlerThreads()}.
   *
   * @param destination the destination to consume
   * @param group the consumer group
   * @return a builder with those settings, for a case to adjust
   */
  protected SubscriptionSpec.Builder spec(String destination, String group) {
    return SubscriptionSpec.builder(destination, group)
        .concurrency(4)
        .maxInFlight(16)
        .retryPolicy(policy(3, retryDelay()))
        .handlerTimeout(Duration.ofSeconds(10))
        .handlerThreads(handlerThreads());
  }

  private static RetryPolicy policy(int attempts, Duration delay) {
    return RetryPolicy.builder().maxAttempts(attempts).backoff(Backoff.fixed(delay)).build();
  }

  /**
   * Subscribes, remembers the subscription for cleanup and waits until it is assigned (see
   * {@link #awaitAssigned}). The handler is wrapped to record the kind of thread it runs on.
   *
   * @param spec what to consume, and how
   * @param handler called for each delivery
   * @return the running subscription; the kit closes it after the test
   */
  protected Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    boolean virtual = spec.handlerThreads() == HandlerThreads.VIRTUAL;
    Subscription s = subscriber.subscribe(spec, d -> {
      if (isVirtual(Thread.currentThread()) != virtual) {
        wrongThreads.add(Thread.currentThread().toString());
      }
      handler.handle(d);
    });
    opened.add(s);
    awaitAssigned(s, spec);
    return s;
  }

  /**
   * Publishes and waits up to {@link #timeout()} for the confirm.
   *
   * @param destination where to publish
   * @param message the message
   * @return {@code message}, once confirmed
   * @throws AssertionError if the publish fails, is not confirmed in time, or the thread is
   *     interrupted
   */
  protected Message publish(String destination, Message message) {
    try {
      publisher.publish(destination, message).get(timeout().toMillis(), TimeUnit.MILLISECONDS);
      return message;
    } catch (ExecutionException e) {
      throw new AssertionError("publish failed: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new AssertionError("no confirm within " + timeout(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  private Message publish(String destination, String key, String label) {
    return publish(destination, Message.builder().type("order.paid").key(key)
        .payload("{\"label\":\"" + label + "\"}").header("label", label).build());
  }

  private void blockUntilTestOver() {
    try {
      testOver.await(timeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void await(CountDownLatch latch, Duration timeout) {
    try {
      if (!latch.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError("latch not released within " + timeout);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /**
   * Waits for {@code latch} up to {@link #timeout()}, going on waiting through interrupts (as a
   * handler that ignores its timeout's interrupt does); keeps no interrupt.
   */
  private void awaitIgnoringInterrupts(CountDownLatch latch) {
    long end = System.nanoTime() + timeout().toNanos();
    while (latch.getCount() > 0 && end - System.nanoTime() > 0) {
      try {
        latch.await(end - System.nanoTime(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException ignored) {
        // the timeout's interrupt: this handler does not stop for it
      }
    }
  }

  /**
   * The handler outcomes a subscription reports for one destination, in order: {@code success},
   * {@code failure} ({@link MetricsListener#handlerDuration}) or {@code timeout} ({@link
   * MetricsListener#handlerTimedOut}); thread-safe.
   */
  private static final class HandlerOutcomes implements MetricsListener {
    private final String destination;
    private final List<String> outcomes = new CopyOnWriteArrayList<>();

    HandlerOutcomes(String destination) {
      this.destination = destination;
    }

    @Override
    public void handlerDuration(String d, String group, Duration duration, boolean failed) {
      if (d.equals(destination)) {
        outcomes.add(failed ? "failure" : "success");
      }
    }

    @Override
    public void handlerTimedOut(String d, String group, Duration duration) {
      if (d.equals(destination)) {
        outcomes.add("timeout");
      }
    }

    List<String> all() {
      return List.copyOf(outcomes);
    }
  }

  /** Records every delivery; thread-safe. */
  protected static final class Recorder implements MessageHandler {
    final List<Delivery> deliveries = new CopyOnWriteArrayList<>();
    private final MessageHandler then;

    Recorder() {
      this(d -> { });
    }

    Recorder(MessageHandler then) {
      this.then = then;
    }

    @Override
    public void handle(Delivery delivery) throws Exception {
      deliveries.add(delivery);
      then.handle(delivery);
    }

    Set<String> ids() {
      Set<String> ids = new HashSet<>();
      for (Delivery d : deliveries) {
        ids.add(d.message().id());
      }
      return ids;
    }

    List<Integer> attemptsOf(String messageId) {
      List<Integer> attempts = new ArrayList<>();
      for (Delivery d : deliveries) {
        if (d.message().id().equals(messageId)) {
          attempts.add(d.attempt());
        }
      }
      return attempts;
    }

    List<String> labels() {
      List<String> labels = new ArrayList<>();
      for (Delivery d : deliveries) {
        labels.add(d.message().headers().get("label") + "#" + d.attempt());
      }
      return labels;
    }
  }

  private static Set<String> idsOf(List<Message> messages) {
    Set<String> ids = new HashSet<>();
    for (Message m : messages) {
      ids.add(m.id());
    }
    return ids;
  }

  @Nested
  @DisplayName("delivery")
  class DeliveryCases {

    @Test
    @DisplayName("every published message is delivered once, as published, on attempt 1")
    void deliversEveryMessage() {
      String destination = newDestination();
      Recorder recorder = new Recorder();
      Subscription s = subscribe(spec(destination, "g").build(), recorder);
      List<Message> sent = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        sent.add(publish(destination, i % 4 == 0 ? null : "key-" + (i % 3), "m" + i));
      }

      Await.until(timeout(), "20 deliveries", () -> recorder.ids().size() == 20);

      assertThat(recorder.ids()).isEqualTo(idsOf(sent));
      assertThat(recorder.deliveries).hasSize(20).allSatisfy(d -> {
        assertThat(d.attempt()).isEqualTo(1);
        assertThat(d.firstFailureAt()).isNull();
        assertThat(d.source()).isEqualTo(destination);
      });
      for (Message m : sent) {
        assertThat(recorder.deliveries).filteredOn(d -> d.message().id().equals(m.id()))
            .singleElement().satisfies(d -> assertThat(d.message()).isEqualTo(m));
      }
      assertThat(s.isRunning()).isTrue();
    }

    @Test
    @DisplayName("each group sees every message; members of one group share them")
    void groups() {
      String destination = newDestination();
      Recorder g1 = new Recorder();
      Recorder g2 = new Recorder();
      Recorder shareA = new Recorder();
      Recorder shareB = new Recorder();
      subscribe(spec(destination, "g1").build(), g1);
      subscribe(spec(destination, "g2").build(), g2);
      subscribe(spec(destination, "shared").build(), shareA);
      subscribe(spec(destination, "shared").build(), shareB);
      List<Message> sent = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        sent.add(publish(destination, "key-" + i, "m" + i));
      }

      Await.until(timeout(), "every group has every message", () -> g1.ids().size() == 12
          && g2.ids().size() == 12 && shareA.ids().size() + shareB.ids().size() >= 12
          && union(shareA, shareB).size() == 12);

      assertThat(g1.ids()).isEqualTo(idsOf(sent));
      assertThat(g2.ids()).isEqualTo(idsOf(sent));
      assertThat(union(shareA, shareB)).isEqualTo(idsOf(sent));
      assertThat(shareA.deliveries.size() + shareB.deliveries.size())
          .as("members share the group's messages instead of each receiving all")
          .isLessThan(24);
    }

    private Set<String> union(Recorder a, Recorder b) {
      Set<String> all = new HashSet<>(a.ids());
      all.addAll(b.ids());
      return all;
    }

    @Test
    @DisplayName("a message whose expiry has passed is not delivered")
    void expiredNotDelivered() {
      String destination = newDestination();
      Recorder recorder = new Recorder();
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).build(), recorder);
      Instant now = Instant.now();
      Message stale = publish(destination, Message.builder().type("sms.code").key("k")
          .payload("123456").createdAt(now.minusSeconds(7200)).expiresAt(now.minusSeconds(3600))
          .build());
      Message fresh = publish(destination, "k", "fresh");

      Await.until(timeout(), "the fresh message behind the stale one of its key",
          () -> recorder.ids().contains(fresh.id()));

      assertThat(recorder.ids()).doesNotContain(stale.id());
    }
  }

  @Nested
  @DisplayName("failures")
  class Failures {

    @Test
    @DisplayName("a failed message is not acknowledged: it comes again as attempt 2 with its first"
        + " failure time")
    void redeliveredAfterFailure() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        if (d.attempt() == 1) {
          throw new IllegalStateException("transient");
        }
      });
      subscribe(spec(destination, "g").build(), recorder);
      Message m = publish(destination, "k", "flaky");

      Await.until(timeout(), "the second attempt", () -> recorder.attemptsOf(m.id()).size() == 2);

      assertThat(recorder.attemptsOf(m.id())).containsExactly(1, 2);
      Delivery second = recorder.deliveries.get(1);
      assertThat(second.isRetry()).isTrue();
      assertThat(second.firstFailureAt()).isNotNull();
      assertThat(second.message()).isEqualTo(m);
    }

    @Test
    @DisplayName("after the last attempt the message goes to dead letters with message, headers,"
        + " trace id, reason, exception, attempts and first and last failure times")
    void deadLetterAfterAttempts() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        throw new IOException("smtp down");
      });
      subscribe(spec(destination, "g").build(), recorder);
      Instant before = Instant.now();
      Message m = publish(destination, "k", "doomed");

      DeadLetter d = awaitDeadLetter(destination, m.id(), timeout());

      assertThat(recorder.attemptsOf(m.id())).containsExactly(1, 2, 3);
      assertThat(d.messageId()).isEqualTo(m.id());
      assertThat(d.message()).isEqualTo(m);
      assertThat(d.message().headers()).containsEntry("label", "doomed");
      assertThat(d.message().traceId()).isEqualTo(m.traceId());
      assertThat(d.source()).isEqualTo(destination);
      assertThat(d.reason()).contains("attempts exhausted").contains("smtp down");
      assertThat(d.exceptionClass()).isEqualTo(IOException.class.getName());
      assertThat(d.exceptionMessage()).isEqualTo("smtp down");
      assertThat(d.attempts()).isEqualTo(3);
      assertThat(d.firstFailureAt()).isAfterOrEqualTo(before.minusSeconds(1));
      assertThat(d.lastFailureAt()).isAfterOrEqualTo(d.firstFailureAt())
          .isBeforeOrEqualTo(Instant.now().plusSeconds(1));
    }

    @Test
    @DisplayName("payloads are never logged: a message retried and dead-lettered leaves its payload"
        + " in no relaykit log line at any level, nor in its deliveries' or dead letter's toString")
    void payloadsAreNeverLogged() {
      String destination = newDestination();
      String marker = "payload-marker-" + UUID.randomUUID();
      try (LogCapture logs = LogCapture.open()) {
        Recorder recorder = new Recorder(d -> {
          throw new IOException("refused");
        });
        subscribe(spec(destination, "g").build(), recorder);
        Message m = publish(destination, Message.builder().type("order.paid").key("k")
            .payload("{\"card\":\"" + marker + "\"}").build());

        DeadLetter d = awaitDeadLetter(destination, m.id(), timeout());

        assertThat(recorder.attemptsOf(m.id())).containsExactly(1, 2, 3);
        assertThat(d.message().payloadUtf8()).contains(marker);
        logs.assertNeverContains(marker);
        assertThat(d.toString()).doesNotContain(marker);
        for (Delivery delivery : recorder.deliveries) {
          assertThat(delivery.toString()).doesNotContain(marker);
        }
      }
    }

    @Test
    @DisplayName("a W3C trace context travels to the handler on every attempt and onto the dead"
        + " letter; the relaykit trace id is the traceparent's")
    void traceContextTravels() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        throw new IOException("still down");
      });
      subscribe(spec(destination, "g").build(), recorder);
      TraceContext sent = new TraceContext("4bf92f3577b34da6a3ce929d0e0e4736",
          "00f067aa0ba902b7", 1, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
      Message m = publish(destination, Message.builder().type("order.paid").key("k")
          .payload("{\"label\":\"traced\"}").traceContext(sent).build());
      assertThat(m.traceId()).isEqualTo(sent.traceId());

      DeadLetter d = awaitDeadLetter(destination, m.id(), timeout());

      assertThat(recorder.attemptsOf(m.id())).containsExactly(1, 2, 3);
      for (Delivery delivery : recorder.deliveries) {
        assertThat(delivery.traceContext()).as("attempt " + delivery.attempt()).contains(sent);
        assertThat(delivery.message().traceId()).isEqualTo(sent.traceId());
      }
      assertThat(d.message().traceContext().context()).contains(sent);
      assertThat(d.message().traceId()).isEqualTo(sent.traceId());
    }

    @Test
    @DisplayName("malformed trace headers never fail a message: it is delivered without them, and"
        + " each is counted once through the subscription's metrics, not again on its retry")
    void malformedTraceHeadersCounted() {
      String destination = newDestination();
      Map<String, Long> ignored = new ConcurrentHashMap<>();
      MetricsListener metrics = new MetricsListener() {
        @Override
        public void ignored(String where, String reason, long count) {
          ignored.merge(where + " " + reason, count, Long::sum);
        }
      };
      Recorder recorder = new Recorder(d -> {
        if (d.attempt() == 1 && "retry".equals(d.message().headers().get("label"))) {
          throw new IOException("once");
        }
      });
      subscribe(spec(destination, "g").metrics(metrics).build(), recorder);
      String valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      Message badParent = publish(destination, Message.builder().type("t").key("a")
          .payload("x").header("label", "retry").header("traceparent", "00-not-a-traceparent")
          .build());
      Message badState = publish(destination, Message.builder().type("t").key("b")
          .payload("x").header("traceparent", valid).header("tracestate", "Bad Key=1").build());
      Message fine = publish(destination, Message.builder().type("t").key("c").payload("x")
          .header("traceparent", valid).header("tracestate", "rojo=00f067aa0ba902b7").build());

      Await.until(timeout(), "every message, and the retry", () ->
          recorder.attemptsOf(badParent.id()).equals(List.of(1, 2))
              && recorder.attemptsOf(badState.id()).size() == 1
              && recorder.attemptsOf(fine.id()).size() == 1);

      assertThat(ignored).containsOnly(
          Map.entry(destination + " " + MetricsListener.IGNORED_TRACEPARENT, 1L),
          Map.entry(destination + " " + MetricsListener.IGNORED_TRACESTATE, 1L));
      for (Delivery d : recorder.deliveries) {
        if (d.message().id().equals(badParent.id())) {
          assertThat(d.traceContext()).isEmpty();
        } else {
          assertThat(d.traceContext()).isPresent();
        }
      }
    }

    @Test
    @DisplayName("a permanent failure goes to dead letters after one attempt")
    void permanentFailure() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        throw new PermanentFailureException("unknown product");
      });
      subscribe(spec(destination, "g").build(), recorder);
      Message m = publish(destination, "k", "bad");

      DeadLetter d = awaitDeadLetter(destination, m.id(), timeout());

      assertThat(recorder.attemptsOf(m.id())).containsExactly(1);
      assertThat(d.attempts()).isEqualTo(1);
      assertThat(d.reason()).contains("permanent").contains("unknown product");
      assertThat(d.firstFailureAt()).isEqualTo(d.lastFailureAt());
    }

    @Test
    @DisplayName("a dead-lettering logs one WARN line (id, destination, group, attempts, reason;"
        + " never the payload) and counts once for the destination and group")
    void deadLetteringIsLoggedAndCounted() {
      String destination = newDestination();
      String marker = "payload-marker-" + UUID.randomUUID();
      Map<String, Long> counted = new ConcurrentHashMap<>();
      MetricsListener metrics = new MetricsListener() {
        @Override
        public void deadLettered(String where, String group) {
          counted.merge(where + " " + group, 1L, Long::sum);
        }
      };
      try (LogCapture logs = LogCapture.open()) {
        Recorder recorder = new Recorder(d -> {
          throw new PermanentFailureException("unknown product");
        });
        subscribe(spec(destination, "g").metrics(metrics).build(), recorder);
        Message m = publish(destination, Message.builder().type("order.paid").key("k")
            .payload("{\"card\":\"" + marker + "\"}").build());

        DeadLetter d = awaitDeadLetter(destination, m.id(), timeout());
        Await.until(timeout(), "the dead-letter line and count", () ->
            logs.lines().stream().anyMatch(l -> l.contains("dead-lettered message " + m.id()))
                && !counted.isEmpty());

        // The group as the transport names it (a test may scope the group's name).
        assertThat(counted).hasSize(1);
        String group = counted.keySet().iterator().next().substring(destination.length() + 1);
        if (d.group() != null) {
          assertThat(group).isEqualTo(d.group());
        }
        assertThat(counted).containsExactly(Map.entry(destination + " " + group, 1L));
        List<String> lines = logs.lines().stream()
            .filter(l -> l.contains("dead-lettered message " + m.id())).toList();
        assertThat(lines).singleElement().asString().contains(" WARNING ")
            .contains(" of " + destination + " (group " + group + ") after 1 attempt: ")
            .contains("unknown product");
        logs.assertNeverContains(marker);
      }
    }

    @Test
    @DisplayName("a handler that runs past its timeout counts as a retryable failure, is timed"
        + " once as timed out, and its late normal return is not timed again")
    void timeoutIsRetryable() {
      String destination = newDestination();
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean lateReturn = new AtomicBoolean();
      Recorder recorder = new Recorder(d -> {
        if (d.attempt() == 1) {
          awaitIgnoringInterrupts(release); // past the timeout, then returns normally
          lateReturn.set(true);
        }
      });
      HandlerOutcomes outcomes = new HandlerOutcomes(destination);
      subscribe(spec(destination, "g").handlerTimeout(Duration.ofMillis(300)).metrics(outcomes)
          .build(), recorder);
      Message m = publish(destination, "k", "slow");

      Await.until(timeout(), "the first attempt timed as timed out while its handler runs on",
          () -> outcomes.all().contains("timeout"));
      assertThat(lateReturn).as("still running").isFalse();
      // Released only now: a transport may run the key's retry only once the stuck handler let go
      // of its worker (RabbitMQ's key lanes).
      release.countDown();
      Await.until(timeout(), "the timed-out handler's late return", lateReturn::get);
      Await.until(timeout(), "the attempt after the timeout, timed as a success",
          () -> recorder.attemptsOf(m.id()).size() >= 2 && outcomes.all().contains("success"));
      Await.holds(quietWindow(), "the late return of the timed-out handler is not timed",
          () -> outcomes.all().size() == 2);

      assertThat(recorder.attemptsOf(m.id())).startsWith(1, 2);
      assertThat(outcomes.all()).containsExactly("timeout", "success");
    }

    @Test
    @DisplayName("a message waiting for its retry does not block other keys")
    void retryDoesNotBlockOtherKeys() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        if (d.message().key().orElseThrow().equals("A") && d.attempt() == 1) {
          throw new IllegalStateException("A fails once");
        }
      });
      // A's retry is due only after the test's whole time budget: B's messages cannot be
      // waiting behind it.
      subscribe(spec(destination, "g").retryPolicy(policy(3, timeout().multipliedBy(2))).build(),
          recorder);
      Message a = publish(destination, "A", "a");
      List<Message> others = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        others.add(publish(destination, "B" + i, "b" + i));
      }

      Await.until(timeout(), "other keys delivered while A waits for its retry",
          () -> recorder.ids().containsAll(idsOf(others)));
      assertThat(recorder.attemptsOf(a.id())).as("A waits for its retry").containsExactly(1);
    }
  }

  @Nested
  @DisplayName("poison records and dead-letter reads")
  class PoisonAndDeadLetterReads {

    @Test
    @DisplayName("a poison record with a long exception: its failure headers stay bounded, it is"
        + " dead-lettered after its attempts and the key's next record is handled")
    void poisonWithLongException() {
      String destination = newDestination();
      // About 1 MB of UTF-8 text in 2- and 3-byte characters: cuts must respect characters.
      String huge = "\u00e9\u20ac".repeat(200_000);
      Recorder recorder = new Recorder(d -> {
        if (d.message().headers().get("label").equals("poison")) {
          throw new IllegalStateException(huge);
        }
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).build(), recorder);
      Message poison = publish(destination, "k", "poison");
      Message next = publish(destination, "k", "next");

      DeadLetter d = awaitDeadLetter(destination, poison.id(), timeout());
      Await.until(timeout(), "the key's next record handled",
          () -> recorder.ids().contains(next.id()));

      assertThat(recorder.attemptsOf(poison.id())).containsExactly(1, 2, 3);
      assertThat(d.attempts()).isEqualTo(3);
      assertThat(d.message()).isEqualTo(poison);
      assertThat(d.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
      assertThat(d.exceptionMessage()).startsWith("\u00e9\u20ac\u00e9\u20ac");
      assertThat(d.exceptionMessage().getBytes(StandardCharsets.UTF_8).length)
          .isLessThanOrEqualTo(FailureRoute.MAX_EXCEPTION_MESSAGE_BYTES);
      assertThat(d.reason()).contains("attempts exhausted");
      assertThat(d.reason().getBytes(StandardCharsets.UTF_8).length)
          .isLessThanOrEqualTo(FailureRoute.MAX_REASON_BYTES);
      assertThat(recorder.attemptsOf(next.id())).containsExactly(1);
    }

    @Test
    @DisplayName("dead letters read many times (list, count, find) are unchanged and still there")
    void deadLettersReadManyTimes() throws Exception {
      String destination = newDestination();
      DeadLetterStore store = deadLetterStore(destination, "g");
      assumeTrue(store != null, "this kit subclass offers no dead-letter store to read");
      try {
        subscribe(spec(destination, "g").build(), d -> {
          throw new PermanentFailureException("unknown product");
        });
        Message m = publish(destination, "k", "dead");
        DeadLetter first = awaitDeadLetter(destination, m.id(), timeout());

        DeadLetterQuery query = DeadLetterQuery.all().withMessageId(m.id());
        for (int i = 0; i < 10; i++) {
          assertThat(store.list(query)).containsExactly(first);
          assertThat(store.count(query)).isEqualTo(1);
          assertThat(store.find(first.id())).contains(first);
        }
        assertThat(awaitDeadLetter(destination, m.id(), timeout())).isEqualTo(first);
      } finally {
        if (store instanceof AutoCloseable c) {
          c.close();
        }
      }
    }
  }

  @Nested
  @DisplayName("hot keys, restarts and members joining")
  class HotKeysRestartsAndMembers {

    @Test
    @DisplayName("a hot failing key with more later records than maxInFlight does not stop the"
        + " other keys")
    void hotFailingKeyDoesNotStopOtherKeys() {
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        if (d.message().key().orElse("").equals("hot")) {
          throw new IllegalStateException("the hot key fails");
        }
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).concurrency(4).maxInFlight(8)
          .retryPolicy(policy(3, Duration.ofMinutes(10))).build(), recorder);
      for (int i = 0; i < 11; i++) {
        publish(destination, "hot", "hot-" + i);
      }
      Message cold = publish(destination, "cold", "cold");
      Await.until(timeout(), "the other key's message handled",
          () -> recorder.ids().contains(cold.id()));
    }

    @Test
    @DisplayName("restart before a retry is due: the message is delivered again after the restart"
        + " and not lost")
    void restartBeforeARetryIsDue() {
      assumeTrue(keepsRetriesAcrossRestart(),
          "this transport keeps nothing across a restart of its subscriptions");
      String destination = newDestination();
      AtomicBoolean failing = new AtomicBoolean(true);
      Recorder first = new Recorder(d -> {
        if (failing.get()) {
          throw new IllegalStateException("fails before the restart");
        }
      });
      // Ten retry delays: time to close before the retry is due (should it come first anyway,
      // it fails again and the restarted subscription gets the attempt after it).
      SubscriptionSpec retrySlowly = spec(destination, "g")
          .retryPolicy(policy(4, retryDelay().multipliedBy(10))).build();
      Subscription s = subscribe(retrySlowly, first);
      Message m = publish(destination, "k", "retried");
      Await.until(timeout(), "the first attempt failed", () -> first.ids().contains(m.id()));
      afterFirstFailure(destination, retrySlowly);
      s.close(Duration.ofSeconds(5));
      int failedBefore = first.attemptsOf(m.id()).size();

      failing.set(false);
      Recorder second = new Recorder();
      subscribe(retrySlowly, second);
      Await.until(timeout(), "delivered again after the restart",
          () -> second.ids().contains(m.id()));
      assertThat(second.attemptsOf(m.id()).get(0)).as("the retry, its failed attempts counted")
          .isEqualTo(failedBefore + 1);
    }

    @Test
    @DisplayName("a member joining mid-run: every message handled, repeats only for work in flight")
    void memberJoiningMidRun() {
      String destination = newDestination();
      int total = 40;
      SubscriptionSpec spec = spec(destination, "g").ordering(OrderingMode.KEY).concurrency(4)
          .maxInFlight(8).build();
      Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
      CountDownLatch joined = new CountDownLatch(1);
      AtomicInteger before = new AtomicInteger();
      MessageHandler handler = d -> {
        if (before.incrementAndGet() > 10) {
          await(joined, timeout()); // the first member holds its work until the second joined
        }
        handled.computeIfAbsent(d.message().id(), k -> new AtomicInteger()).incrementAndGet();
      };
      subscribe(spec, handler);
      List<Message> messages = new ArrayList<>();
      for (int i = 0; i < total; i++) {
        messages.add(publish(destination, "k" + (i % 8), "m-" + i));
      }
      Await.until(timeout(), "the first member started ten",
          () -> before.get() > 10);
      subscribe(spec, d -> handled.computeIfAbsent(d.message().id(), k -> new AtomicInteger())
          .incrementAndGet());
      joined.countDown();
      Await.until(timeout(), "every message handled",
          () -> handled.keySet().containsAll(idsOf(messages)));
      long repeated = handled.values().stream().filter(n -> n.get() > 1).count();
      assertThat(repeated).as("messages handled more than once").isLessThanOrEqualTo(8);
    }
  }

  @Nested
  @DisplayName("order")
  class Order {

    @Test
    @DisplayName("KEY: one message per key at a time, each key in publish order, under 8 workers")
    void keyOrderUnderConcurrency() {
      String destination = newDestination();
      Map<String, AtomicInteger> active = new ConcurrentHashMap<>();
      AtomicBoolean overlap = new AtomicBoolean();
      Recorder recorder = new Recorder(d -> {
        AtomicInteger a = active.computeIfAbsent(d.message().key().orElseThrow(),
            k -> new AtomicInteger());
        if (a.incrementAndGet() > 1) {
          overlap.set(true);
        }
        Thread.onSpinWait();
        a.decrementAndGet();
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).concurrency(8).maxInFlight(64)
          .build(), recorder);
      Map<String, List<String>> published = new ConcurrentHashMap<>();
      for (int i = 0; i < 160; i++) {
        String key = "key-" + (i % 8);
        Message m = publish(destination, key, key + "/" + i);
        published.computeIfAbsent(key, k -> new ArrayList<>()).add(m.id());
      }

      Await.until(timeout(), "160 deliveries", () -> recorder.ids().size() == 160);

      assertThat(overlap).as("two messages of one key ran at once").isFalse();
      for (Map.Entry<String, List<String>> e : published.entrySet()) {
        List<String> got = new ArrayList<>();
        for (Delivery d : recorder.deliveries) {
          if (d.message().key().orElseThrow().equals(e.getKey())) {
            got.add(d.message().id());
          }
        }
        assertThat(got).as("order of %s", e.getKey()).containsExactlyElementsOf(e.getValue());
      }
    }

    @Test
    @DisplayName("KEY: a message waiting for its retry holds back the later messages of its key")
    void retryHoldsItsKey() {
      assumeTrue(holdsKeyBehindRetry(), "this transport's retries leave the key's order");
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> {
        if (d.message().headers().get("label").equals("A1") && d.attempt() == 1) {
          throw new IllegalStateException("A1 fails once");
        }
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).build(), recorder);
      publish(destination, "A", "A1");
      publish(destination, "A", "A2");
      publish(destination, "A", "A3");

      Await.until(timeout(), "A1 retried and A2, A3 delivered",
          () -> recorder.deliveries.size() == 4);

      assertThat(recorder.labels()).containsExactly("A1#1", "A1#2", "A2#1", "A3#1");
    }

    @Test
    @DisplayName("PARTITION: one message at a time, in publish order, whatever the workers")
    void partitionOrder() {
      String destination = newDestination();
      if (!supportsPartitionOrder()) {
        assertThatThrownBy(() -> subscriber.subscribe(spec(destination, "g")
            .ordering(OrderingMode.PARTITION).build(), d -> { }))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PARTITION");
        return;
      }
      AtomicInteger active = new AtomicInteger();
      AtomicBoolean overlap = new AtomicBoolean();
      Recorder recorder = new Recorder(d -> {
        if (active.incrementAndGet() > 1) {
          overlap.set(true);
        }
        Thread.onSpinWait();
        active.decrementAndGet();
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.PARTITION).concurrency(4).build(),
          recorder);
      List<String> sent = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        sent.add(publish(destination, "key-" + (i % 5), "m" + i).id());
      }

      Await.until(timeout(), "40 deliveries", () -> recorder.ids().size() == 40);

      assertThat(overlap).isFalse();
      List<String> got = new ArrayList<>();
      recorder.deliveries.forEach(d -> got.add(d.message().id()));
      assertThat(got).containsExactlyElementsOf(sent);
    }
  }

  @Nested
  @DisplayName("bounds")
  class Bounds {

    @Test
    @DisplayName("at most `concurrency` handlers run at once")
    void concurrencyBound() {
      String destination = newDestination();
      AtomicInteger active = new AtomicInteger();
      AtomicInteger peak = new AtomicInteger();
      CountDownLatch release = new CountDownLatch(1);
      Recorder recorder = new Recorder(d -> {
        peak.accumulateAndGet(active.incrementAndGet(), Math::max);
        try {
          await(release, timeout());
        } finally {
          active.decrementAndGet();
        }
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.UNORDERED).concurrency(3)
          .maxInFlight(3).build(), recorder);
      for (int i = 0; i < 12; i++) {
        publish(destination, null, "m" + i);
      }

      Await.until(timeout(), "3 handlers running", () -> active.get() == 3);
      Await.holds(quietWindow(), "no 4th handler starts", () -> recorder.deliveries.size() == 3);
      release.countDown();
      Await.until(timeout(), "12 deliveries", () -> recorder.ids().size() == 12);

      assertThat(peak).hasValue(3);
    }

    @Test
    @DisplayName("no more than maxInFlight messages are taken before they finish: a free worker"
        + " waits while a key's backlog fills the bound")
    void maxInFlightBound() {
      String destination = newDestination();
      CountDownLatch release = new CountDownLatch(1);
      Recorder recorder = new Recorder(d -> {
        if (d.message().headers().get("label").equals("A1")) {
          await(release, timeout());
        }
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).concurrency(2).maxInFlight(3)
          .build(), recorder);
      publish(destination, "A", "A1");
      Await.until(timeout(), "A1 running", () -> recorder.deliveries.size() == 1);
      publish(destination, "A", "A2");
      publish(destination, "A", "A3");
      Message b = publish(destination, "B", "B1");

      Await.holds(quietWindow(), "B1 waits: A1, A2 and A3 fill the in-flight bound of 3",
          () -> !recorder.ids().contains(b.id()));
      release.countDown();

      Await.until(timeout(), "all 4 delivered", () -> recorder.ids().size() == 4);
      assertThat(recorder.labels()).startsWith("A1#1").contains("A2#1", "A3#1", "B1#1");
    }
  }

  @Nested
  @DisplayName("close")
  class Close {

    @Test
    @DisplayName("close waits for the running handler, acknowledges it and reports a full drain")
    void drains() throws Exception {
      String destination = newDestination();
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean finished = new AtomicBoolean();
      Subscription s = subscribe(spec(destination, "g").build(), d -> {
        started.countDown();
        await(release, timeout());
        finished.set(true);
      });
      publish(destination, "k", "slow");
      await(started, timeout());

      CompletableFuture<Boolean> closing = CompletableFuture.supplyAsync(() -> {
        boolean drained = s.close(timeout());
        return drained && finished.get();
      });
      Await.holds(quietWindow(), "close waits for the handler", () -> !closing.isDone());
      release.countDown();

      assertThat(closing.get(timeout().toMillis(), TimeUnit.MILLISECONDS))
          .as("close returned true after the handler finished").isTrue();
      assertThat(s.isRunning()).isFalse();
    }

    @Test
    @DisplayName("a handler still running at the close deadline is not acknowledged: the next"
        + " member of the group gets the message again")
    void unfinishedIsRedelivered() {
      String destination = newDestination();
      CountDownLatch started = new CountDownLatch(1);
      Subscription first = subscribe(spec(destination, "g").build(), d -> {
        started.countDown();
        blockUntilTestOver();
      });
      Message m = publish(destination, "k", "stuck");
      await(started, timeout());

      assertThat(first.close(Duration.ofMillis(200))).isFalse();
      assertThat(first.isRunning()).isFalse();

      Recorder next = new Recorder();
      subscribe(spec(destination, "g").build(), next);
      Await.until(timeout(), "redelivery to the next member", () -> next.ids().contains(m.id()));
    }
  }

  @Nested
  @DisplayName("what arrives on the wire")
  class Wire {

    @Test
    @DisplayName("a relaykit message whose attempt header is not a number, or whose first failure"
        + " time is not an instant, is dead-lettered naming the header; the next message of its"
        + " key is delivered")
    void malformedAttemptHeaders() {
      assumeTrue(writesRawRecords(), "this kit subclass cannot write raw records");
      String destination = newDestination();
      Recorder recorder = new Recorder(d -> { });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).build(), recorder);
      Message bad1 = Message.builder().type("t").key("k").payload("bad-attempt").build();
      Message bad2 = Message.builder().type("t").key("k").payload("bad-first").build();
      Message good = Message.builder().type("t").key("k").payload("good").build();
      Map<String, String> w1 = new java.util.LinkedHashMap<>(
          io.relaykit.message.MessageHeaders.toWire(bad1));
      w1.put(io.relaykit.message.MessageHeaders.ATTEMPT, "two");
      Map<String, String> w2 = new java.util.LinkedHashMap<>(
          io.relaykit.message.MessageHeaders.toWire(bad2));
      w2.put(io.relaykit.message.MessageHeaders.ATTEMPT, "1");
      w2.put(io.relaykit.message.MessageHeaders.FIRST_FAILURE_AT, "yesterday");
      publishRaw(destination, "k", bad1.payload(), w1);
      publishRaw(destination, "k", bad2.payload(), w2);
      publishRaw(destination, "k", good.payload(),
          io.relaykit.message.MessageHeaders.toWire(good));

      Await.until(timeout(), "the good message delivered",
          () -> recorder.ids().contains(good.id()));
      assertThat(awaitDeadLetter(destination, bad1.id(), timeout()).reason())
          .contains(io.relaykit.message.MessageHeaders.ATTEMPT);
      assertThat(awaitDeadLetter(destination, bad2.id(), timeout()).reason())
          .contains(io.relaykit.message.MessageHeaders.FIRST_FAILURE_AT);
      assertThat(recorder.ids()).containsExactly(good.id());
    }

    @Test
    @DisplayName("KEY: foreign messages of one key mapped from keyHeader run one at a time, in"
        + " order, whatever their transport keys; the handler sees the mapped key")
    void keyOrderByMappedKey() {
      assumeTrue(writesRawRecords(), "this kit subclass cannot write raw records");
      String destination = newDestination();
      Map<String, AtomicInteger> active = new ConcurrentHashMap<>();
      AtomicBoolean overlap = new AtomicBoolean();
      List<String> seen = new CopyOnWriteArrayList<>();
      Recorder recorder = new Recorder(d -> {
        String key = d.message().key().orElseThrow();
        AtomicInteger a = active.computeIfAbsent(key, k -> new AtomicInteger());
        if (a.incrementAndGet() > 1) {
          overlap.set(true);
        }
        seen.add(key + "/" + d.message().payloadUtf8());
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        while (System.nanoTime() - end < 0) {
          Thread.onSpinWait(); // long enough for another worker to start the next one
        }
        a.decrementAndGet();
      });
      subscribe(spec(destination, "g").ordering(OrderingMode.KEY).concurrency(8)
          .inbound(io.relaykit.message.InboundMapping.foreign().keyHeader("order-id").build())
          .build(), recorder);
      Map<String, List<String>> published = new ConcurrentHashMap<>();
      for (int i = 0; i < 24; i++) {
        String key = "order-" + (i % 3);
        publishRaw(destination, "raw-" + i, Integer.toString(i).getBytes(StandardCharsets.UTF_8),
            Map.of("order-id", key));
        published.computeIfAbsent(key, k -> new ArrayList<>()).add(key + "/" + i);
      }

      Await.until(timeout(), "24 deliveries", () -> seen.size() == 24);

      assertThat(overlap).as("two messages of one mapped key ran at once").isFalse();
      for (Map.Entry<String, List<String>> e : published.entrySet()) {
        assertThat(seen.stream().filter(x -> x.startsWith(e.getKey() + "/")).toList())
            .as("order of %s", e.getKey()).containsExactlyElementsOf(e.getValue());
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a null spec or handler throws IllegalArgumentException naming it")
    void nulls() {
      SubscriptionSpec spec = spec(newDestination(), "g").build();
      assertThatThrownBy(() -> subscriber.subscribe(null, d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("spec");
      assertThatThrownBy(() -> subscriber.subscribe(spec, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("handler");
    }
  }
}

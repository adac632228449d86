package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * One scripted run through a real transport with the binder as its listener, then exact meter
 * values: {@value #N} messages, {@value #FAIL_ONCE} of which fail their first attempt and then
 * succeed, and one that fails every attempt and is dead-lettered after {@value #ATTEMPTS}.
 */
abstract class ScriptedRunContract {

  /** OpenTelemetry's messaging attribute names, the binder's tag keys. */
  static final String DESTINATION = "messaging.destination.name";
  static final String GROUP = "messaging.consumer.group.name";
  static final String PARTITION = "messaging.destination.partition.id";

  static final int N = 10;
  static final int FAIL_ONCE = 3;
  static final int ATTEMPTS = 3;
  static final Duration WAIT = Duration.ofSeconds(60);

  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final RelayKitMeterBinder binder = RelayKitMeterBinder.builder().build();

  ScriptedRunContract() {
    binder.bindTo(registry);
  }

  /** A unique destination, ready to subscribe to. */
  abstract String destination();

  /** The transport's publisher, reporting to {@link #binder}. */
  abstract Publisher publisher();

  /** The transport's subscriber, reporting to {@link #binder}. */
  abstract Subscriber subscriber();

  /** Waits until the transport has settled after the run (commits, samples); none by default. */
  void settle(String destination, String group) {}

  double messages(String destination, Stage stage) {
    Counter c = registry.find("relaykit.messages").tags(DESTINATION, destination,
        "stage", RelayKitMeterBinder.stage(stage)).counter();
    return c == null ? 0 : c.count();
  }

  /** Every non-zero relaykit.messages series, for a failure message. */
  String counted() {
    return registry.find("relaykit.messages").counters().stream().filter(c -> c.count() > 0)
        .map(c -> c.getId().getTag(DESTINATION) + "/" + c.getId().getTag("stage") + "="
            + (long) c.count()).sorted().toList().toString();
  }

  static RetryPolicy retries() {
    return RetryPolicy.builder().maxAttempts(ATTEMPTS)
        .backoff(Backoff.fixed(Duration.ofMillis(200))).build();
  }

  @Test
  @DisplayName("counters per stage, handler timer counts and dead letters are exact after the run")
  void scriptedRun() {
    String destination = destination();
    String group = destination + "-g";
    Map<Integer, AtomicInteger> calls = new ConcurrentHashMap<>();
    subscriber().subscribe(SubscriptionSpec.builder(destination, group)
        .ordering(OrderingMode.UNORDERED).concurrency(2).maxInFlight(16).retryPolicy(retries())
        .metrics(binder).build(), d -> {
          int seq = Integer.parseInt(d.message().payloadUtf8());
          int attempt = calls.computeIfAbsent(seq, k -> new AtomicInteger()).incrementAndGet();
          if (seq == 0 || (seq <= FAIL_ONCE && attempt == 1)) {
            throw new IllegalStateException("scripted failure of " + seq + " attempt " + attempt);
          }
        });
    Publisher publisher = publisher();
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      Message m = Message.builder().type("test.scripted").key("k-" + i).payload(Integer.toString(i))
          .build();
      sent.add(m);
      publisher.publish(destination, m).orTimeout(30, TimeUnit.SECONDS).join();
    }

    try {
      Await.until(WAIT, "9 acked and 1 dead-lettered in relaykit.messages",
          () -> messages(destination, Stage.ACKED) == N - 1
              && messages(destination, Stage.DEAD_LETTERED) == 1);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "; counted: " + counted(), e);
    }
    settle(destination, group);

    int delivered = N + FAIL_ONCE + (ATTEMPTS - 1);
    assertThat(messages(destination, Stage.PUBLISHED)).as("published").isEqualTo(N);
    assertThat(messages(destination, Stage.CONFIRMED)).as("confirmed").isEqualTo(N);
    assertThat(messages(destination, Stage.DELIVERED)).as("delivered").isEqualTo(delivered);
    assertThat(messages(destination, Stage.ACKED)).as("acked").isEqualTo(N - 1);
    assertThat(messages(destination, Stage.RETRIED)).as("retried")
        .isEqualTo(FAIL_ONCE + ATTEMPTS - 1);
    assertThat(messages(destination, Stage.DEAD_LETTERED)).as("dead-lettered").isEqualTo(1);
    assertThat(messages(destination, Stage.EXPIRED)).as("expired").isZero();
    assertThat(calls.values().stream().mapToInt(AtomicInteger::get).sum()).isEqualTo(delivered);
    assertThat(registry.find("relaykit.messages").counters()).as("every counted step is under the"
        + " destination, none under a group, retry or dead-letter queue: " + counted())
        .filteredOn(c -> c.count() > 0)
        .allSatisfy(c -> assertThat(c.getId().getTag(DESTINATION)).isEqualTo(destination));

    Timer ok = registry.get("relaykit.handler.duration")
        .tags(DESTINATION, destination, GROUP, group, "outcome", "success").timer();
    Timer failed = registry.get("relaykit.handler.duration")
        .tags(DESTINATION, destination, GROUP, group, "outcome", "failure").timer();
    assertThat(ok.count()).as("successful handler calls").isEqualTo(N - 1);
    assertThat(failed.count()).as("failed handler calls").isEqualTo(FAIL_ONCE + ATTEMPTS);
    assertThat(ok.count() + failed.count()).isEqualTo((long) delivered);
    assertThat(registry.find("relaykit.meters.overflow").counters())
        .allSatisfy(c -> assertThat(c.count()).isZero());
    afterRun(destination, group);
  }

  @Test
  @DisplayName("relayed by an OutboxRelay given relayListener(), each message counts once as"
      + " published and once as confirmed, though relay and publisher both report them")
  void relayedRun() {
    String destination = destination();
    String group = destination + "-g";
    AtomicInteger handled = new AtomicInteger();
    subscriber().subscribe(SubscriptionSpec.builder(destination, group)
        .ordering(OrderingMode.UNORDERED).concurrency(2).maxInFlight(16).retryPolicy(retries())
        .metrics(binder).build(), d -> handled.incrementAndGet());
    InMemoryOutboxStore outbox = new InMemoryOutboxStore();
    for (int i = 0; i < N; i++) {
      outbox.append(destination, Message.builder().type("test.relayed").key("k-" + i)
          .payload(Integer.toString(i)).build());
    }
    OutboxRelay relay = OutboxRelay.builder(outbox, publisher(), new InMemoryDeadLetterStore())
        .listener(binder.relayListener()).metrics(binder).pollInterval(Duration.ofMillis(20))
        .build();
    relay.start();
    try {
      Await.until(WAIT, N + " published, confirmed and acked", () ->
          messages(destination, Stage.PUBLISHED) >= N && messages(destination, Stage.CONFIRMED) >= N
              && messages(destination, Stage.ACKED) >= N);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "; counted: " + counted(), e);
    } finally {
      relay.close(Duration.ofSeconds(10));
    }
    assertThat(messages(destination, Stage.PUBLISHED)).as("published: " + counted()).isEqualTo(N);
    assertThat(messages(destination, Stage.CONFIRMED)).as("confirmed: " + counted()).isEqualTo(N);
    assertThat(messages(destination, Stage.DELIVERED)).as("delivered").isEqualTo(N);
    assertThat(messages(destination, Stage.ACKED)).as("acked").isEqualTo(N);
    assertThat(handled).hasValue(N);
    assertThat(registry.get("relaykit.publish.confirm.duration").tags(DESTINATION, destination)
        .timer().count()).as("confirm timer, reported by the relay").isEqualTo(N);
  }

  /** Transport-specific checks after the common ones. */
  void afterRun(String destination, String group) {}
}

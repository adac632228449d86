package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Attacks on the retry partitions' pause while active work fills {@code maxInFlight}: they wait
 * with the source for at most one poll timeout, then are read on their own.
 */
@DisplayName("Kafka consumer runtime: retry partitions paused with a full source")
class KafkaRetryPauseAttackTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static int seq(io.relaykit.message.Delivery d) {
    return Integer.parseInt(d.message().payloadUtf8());
  }

  @Test
  @DisplayName("every in-flight slot held by records of three lanes whose handlers wait for"
      + " another key's retry: the retry is read on its own, everything finishes once, and the"
      + " in-flight meter never passes maxInFlight plus one poll")
  void everySlotWaitingForARetryDoesNotStarveIt() {
    String topic = newTopic("retrypause", 1);
    List<Message> messages = new ArrayList<>();
    messages.add(message("r", 0));
    for (int i = 1; i <= 24; i++) {
      // three lanes of waiting handlers: active work fills maxInFlight for as long as the retry
      // is not read, and one worker stays free to run it
      messages.add(message("b" + (i % 3), i));
    }
    publishAll(topic, messages);

    CountDownLatch retried = new CountDownLatch(1);
    List<Integer> handled = new CopyOnWriteArrayList<>();
    AtomicLong mostInFlight = new AtomicLong();
    MetricsListener metrics = new MetricsListener() {
      @Override
      public void inFlight(String destination, String group, long count) {
        mostInFlight.accumulateAndGet(count, Math::max);
      }
    };
    int maxInFlight = 8;
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .ordering(OrderingMode.KEY).concurrency(4).maxInFlight(maxInFlight).metrics(metrics)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(300))).build())
        .handlerTimeout(Duration.ofMinutes(2))
        .build(),
        d -> {
          if (seq(d) == 0) {
            if (d.attempt() == 1) {
              throw new IllegalStateException("first attempt fails");
            }
            retried.countDown();
          } else if (!retried.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("retry never ran");
          }
          handled.add(seq(d));
        });
    Await.until(WAIT, "the retry and every record of the main flow handled",
        () -> handled.size() == 25);
    Await.until(WAIT, "everything committed", () -> Long.valueOf(25)
        .equals(committedOffsets(topic + "-g", topic).get(0)));
    assertThat(handled).as("each record once").doesNotHaveDuplicates();
    assertThat(mostInFlight.get()).as("in flight, as the meter reports it")
        .isLessThanOrEqualTo(maxInFlight + maxInFlight / 2);
  }

  @Test
  @DisplayName("share group: the retry reader's slots held by retries whose handlers wait for a"
      + " later record's retry, a copy the share member writes after the reader's last fetch:"
      + " the reader still reads it (it has no source fetch to protect)")
  void shareRetryReaderFullOfWaitingRetriesReadsALaterCopy() throws Exception {
    String topic = newTopic("retrypause-share", 1);
    String group = topic + "-g";
    int waiting = 5;
    CountDownLatch lastRetried = new CountDownLatch(1);
    CountDownLatch allWaiting = new CountDownLatch(waiting);
    List<Integer> handled = new CopyOnWriteArrayList<>();
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().build())) {
      KafkaShareSubscription sub = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
          .concurrency(8).maxInFlight(8)
          .retryPolicy(RetryPolicy.builder().maxAttempts(3)
              .backoff(Backoff.fixed(Duration.ofMillis(200))).build())
          .handlerTimeout(Duration.ofMinutes(2))
          .build(),
          d -> {
            if (d.attempt() == 1) {
              throw new IllegalStateException("first attempts fail");
            }
            if (seq(d) == waiting) {
              lastRetried.countDown();
            } else {
              allWaiting.countDown();
              if (!lastRetried.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("the later record's retry never ran");
              }
            }
            handled.add(seq(d));
          });
      try {
        List<Message> first = new ArrayList<>();
        for (int i = 0; i < waiting; i++) {
          first.add(message("w" + i, i));
        }
        publishAll(topic, first);
        assertThat(allWaiting.await(WAIT.toSeconds(), TimeUnit.SECONDS))
            .as("the retries of the first records run and wait").isTrue();
        publishAll(topic, List.of(message("x", waiting)));
        Await.until(WAIT, "the later record's retry and the waiting retries handled",
            () -> handled.size() == waiting + 1);
      } finally {
        lastRetried.countDown();
        sub.close(Duration.ofSeconds(5));
      }
    }
  }
}

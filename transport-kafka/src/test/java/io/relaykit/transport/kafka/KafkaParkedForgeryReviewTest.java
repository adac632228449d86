package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An independent attack on the parked keys a hand-over names (the fourth part of the commit
 * metadata): the metadata is wire input, and a forged or stale entry must not stall its key for
 * the retry policy's longest wait plus a minute.
 */
@DisplayName("Kafka hand-over review: forged parked-key entries in the commit metadata")
class KafkaParkedForgeryReviewTest {

  /** Far less than the timer bound (3 s backoff + 1 min): a stall shows as a timeout. */
  private static final Duration PROMPT = Duration.ofSeconds(20);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static SubscriptionSpec spec(String topic, String group) {
    return SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).maxInFlight(16)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(3))).build())
        .build();
  }

  @Test
  @DisplayName("an entry naming a retry copy beyond the retry partition's end (no such copy) does"
      + " not hold its key: the key's record runs promptly")
  void entryBeyondRetryLogEndDoesNotStallKey() throws Exception {
    String topic = newTopic("review-forged-park", 1);
    String group = topic + "-g";
    Message m = message("k", 0);
    Message other = message("j", 1);
    KafkaTestSupport.publishAll(topic, List.of(m, other));
    // a forged hand-over: nothing finished past 0, key k parked behind retry copy 0:1000
    FinishedAbove forged = FinishedAbove.withParked(null, 0,
        List.of(new FinishedAbove.Parked(0, 1000, "k")));
    KafkaTestBroker.admin().alterConsumerGroupOffsets(group, java.util.Map.of(
        new TopicPartition(topic, 0), new OffsetAndMetadata(0, forged.encode())))
        .all().get(30, java.util.concurrent.TimeUnit.SECONDS);
    List<String> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(spec(topic, group), d -> handled.add(d.message().id()));
    Await.until(Duration.ofSeconds(60), "the unnamed key's record handled",
        () -> handled.contains(other.id()));
    Await.until(PROMPT, "the forged key's record handled promptly",
        () -> handled.contains(m.id()));
    assertThat(handled).containsExactlyInAnyOrder(m.id(), other.id());
  }

  @Test
  @DisplayName("an entry naming key k at a retry offset that holds another key's copy does not hold"
      + " k until the timer: k's record runs promptly, the other key's copy still runs")
  void entryNamingAnotherKeysCopyDoesNotStallKey() throws Exception {
    String topic = newTopic("review-forged-mismatch", 1);
    String group = topic + "-g";
    Message j = message("j", 0);
    KafkaTestSupport.publishAll(topic, List.of(j));
    List<String> attempts = new CopyOnWriteArrayList<>();
    KafkaSubscription a = clients.subscriber().subscribe(spec(topic, group), d -> {
      attempts.add(d.message().id() + "#" + d.attempt());
      throw new IllegalStateException("fails");
    });
    Await.until(Duration.ofSeconds(60), "j failed once (its copy at retry offset 0)",
        () -> attempts.contains(j.id() + "#1"));
    assertThat(a.close(Duration.ofSeconds(5))).isTrue();
    long base = KafkaTestSupport.committedOffsets(group, topic).get(0);
    // overwrite the hand-over: k (never parked) named behind j's copy at retry offset 0
    FinishedAbove forged = FinishedAbove.withParked(null, base,
        List.of(new FinishedAbove.Parked(0, 0, "k")));
    KafkaTestBroker.admin().alterConsumerGroupOffsets(group, java.util.Map.of(
        new TopicPartition(topic, 0), new OffsetAndMetadata(base, forged.encode())))
        .all().get(30, java.util.concurrent.TimeUnit.SECONDS);
    Message k = message("k", 1);
    KafkaTestSupport.publishAll(topic, List.of(k));
    List<String> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(spec(topic, group), d -> handled.add(d.message().id()));
    Await.until(Duration.ofSeconds(60), "j's copy handled", () -> handled.contains(j.id()));
    Await.until(PROMPT, "k's record handled promptly", () -> handled.contains(k.id()));
    assertThat(handled).containsExactlyInAnyOrder(j.id(), k.id());
  }

  @Test
  @DisplayName("two graceful hand-overs in a row while k is parked behind its retry copy: the"
      + " second owner hands the hold on, k's records keep their order at the third")
  void holdSurvivesSecondHandOver() throws Exception {
    String topic = newTopic("review-park-storm", 1);
    String group = topic + "-g";
    SubscriptionSpec slow = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).maxInFlight(16)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(12))).build())
        .build();
    Message first = message("k", 0);
    Message second = message("k", 1);
    KafkaTestSupport.publishAll(topic, List.of(first, second));
    List<String> succeeded = new CopyOnWriteArrayList<>();
    List<String> attempts = new CopyOnWriteArrayList<>();
    KafkaSubscription a = clients.subscriber().subscribe(slow, d -> {
      attempts.add(d.message().id() + "#" + d.attempt());
      if (d.message().id().equals(first.id()) && d.attempt() == 1) {
        throw new IllegalStateException("fails once");
      }
      succeeded.add(d.message().id());
    });
    Await.until(Duration.ofSeconds(60), "k's first record failed once",
        () -> attempts.contains(first.id() + "#1"));
    assertThat(a.close(Duration.ofSeconds(5))).isTrue();
    Message marker = message("m", 2);
    KafkaTestSupport.publishAll(topic, List.of(marker));
    KafkaSubscription b = clients.subscriber().subscribe(slow, d -> succeeded.add(d.message().id()));
    Await.until(Duration.ofSeconds(60), "the second owner took the partition",
        () -> succeeded.contains(marker.id()));
    assertThat(b.close(Duration.ofSeconds(5))).isTrue();
    Message third = message("k", 3);
    KafkaTestSupport.publishAll(topic, List.of(third));
    clients.subscriber().subscribe(slow, d -> succeeded.add(d.message().id()));
    Await.until(Duration.ofSeconds(60), "k's three records handled",
        () -> succeeded.containsAll(List.of(first.id(), second.id(), third.id())));
    assertThat(succeeded.stream().filter(id -> !id.equals(marker.id())))
        .as("k's records in order, each once").containsExactly(first.id(), second.id(), third.id());
  }

  @Test
  @DisplayName("k handed over parked behind a retry copy that is then dead-lettered at the next"
      + " owner: k's next record runs right after the dead letter, not after the timer")
  void holdReleasedWhenCopyDeadLettered() throws Exception {
    String topic = newTopic("review-park-dlq", 1);
    String group = topic + "-g";
    SubscriptionSpec two = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).maxInFlight(16)
        .retryPolicy(RetryPolicy.builder().maxAttempts(2)
            .backoff(Backoff.fixed(Duration.ofSeconds(3))).build())
        .build();
    Message first = message("k", 0);
    Message second = message("k", 1);
    KafkaTestSupport.publishAll(topic, List.of(first, second));
    List<String> log = new CopyOnWriteArrayList<>();
    io.relaykit.message.MessageHandler poison = d -> {
      log.add(d.message().id() + "#" + d.attempt());
      if (d.message().id().equals(first.id())) {
        throw new IllegalStateException("always fails");
      }
    };
    KafkaSubscription a = clients.subscriber().subscribe(two, poison);
    Await.until(Duration.ofSeconds(60), "k's first record failed once",
        () -> log.contains(first.id() + "#1"));
    assertThat(a.close(Duration.ofSeconds(5))).isTrue();
    clients.subscriber().subscribe(two, poison);
    Await.until(PROMPT, "k's second record handled promptly",
        () -> log.stream().anyMatch(e -> e.startsWith(second.id())));
    assertThat(log).as("the copy's last attempt before k's next record")
        .containsSubsequence(first.id() + "#2", second.id() + "#1");
  }
}

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
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An independent attack on the graceful hand-over: per-key order when a key is parked for its
 * retry at the moment its partition changes owner.
 */
@DisplayName("Kafka hand-over review: commit metadata as wire input, parked keys across a close")
class KafkaHandOverReviewTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static SubscriptionSpec spec(String topic, String group) {
    return SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).maxInFlight(16)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(3))).build())
        .build();
  }

  /**
   * Key k: its first record fails once (its retry due 3 s later), its second waits parked. The
   * member closes gracefully while k is parked; the next member must not handle k's second record
   * before k's first one succeeds from its retry copy.
   */
  @Test
  @DisplayName("a key parked for its retry at a graceful close keeps its order at the next owner")
  void parkedKeyKeepsOrderAcrossClose() throws Exception {
    String topic = newTopic("review-park-order", 1);
    String group = topic + "-g";
    Message first = message("k", 0);
    Message second = message("k", 1);
    KafkaTestSupport.publishAll(topic, List.of(first, second));
    List<String> succeeded = new CopyOnWriteArrayList<>();
    List<String> attempts = new CopyOnWriteArrayList<>();
    KafkaSubscription a = clients.subscriber().subscribe(spec(topic, group), d -> {
      attempts.add(d.message().id() + "#" + d.attempt());
      if (d.message().id().equals(first.id()) && d.attempt() == 1) {
        throw new IllegalStateException("fails once");
      }
      succeeded.add(d.message().id());
    });
    Await.until(WAIT, "k's first record failed once", () -> attempts.contains(first.id() + "#1"));
    assertThat(a.close(Duration.ofSeconds(5))).isTrue();
    assertThat(succeeded).as("the parked record did not run at the first member").isEmpty();
    clients.subscriber().subscribe(spec(topic, group), d -> succeeded.add(d.message().id()));
    Await.until(WAIT, "both handled", () -> succeeded.contains(first.id())
        && succeeded.contains(second.id()));
    assertThat(succeeded).as("k's records in order").containsExactly(first.id(), second.id());
  }

  /**
   * As above, with a third record of k published after the close: the first member never read
   * it, so only the hand-over's naming of the parked key keeps it behind k's retry.
   */
  @Test
  @DisplayName("a record of a key parked at a graceful close, published after it, waits for the"
      + " key's retry at the next owner")
  void unreadRecordOfParkedKeyWaitsAtNextOwner() throws Exception {
    String topic = newTopic("review-park-unread", 1);
    String group = topic + "-g";
    Message first = message("k", 0);
    Message second = message("k", 1);
    Message third = message("k", 2);
    KafkaTestSupport.publishAll(topic, List.of(first, second));
    List<String> succeeded = new CopyOnWriteArrayList<>();
    List<String> attempts = new CopyOnWriteArrayList<>();
    KafkaSubscription a = clients.subscriber().subscribe(spec(topic, group), d -> {
      attempts.add(d.message().id() + "#" + d.attempt());
      if (d.message().id().equals(first.id()) && d.attempt() == 1) {
        throw new IllegalStateException("fails once");
      }
      succeeded.add(d.message().id());
    });
    Await.until(WAIT, "k's first record failed once", () -> attempts.contains(first.id() + "#1"));
    assertThat(a.close(Duration.ofSeconds(5))).isTrue();
    KafkaTestSupport.publishAll(topic, List.of(third));
    clients.subscriber().subscribe(spec(topic, group), d -> succeeded.add(d.message().id()));
    Await.until(WAIT, "all three handled", () -> succeeded.size() >= 3);
    assertThat(succeeded).as("k's records in order, each once")
        .containsExactly(first.id(), second.id(), third.id());
  }

  private static void commitWithMetadata(String group, String topic, long offset,
      String metadata) throws Exception {
    KafkaTestBroker.admin().alterConsumerGroupOffsets(group, java.util.Map.of(
        new org.apache.kafka.common.TopicPartition(topic, 0),
        new org.apache.kafka.clients.consumer.OffsetAndMetadata(offset, metadata)))
        .all().get(30, java.util.concurrent.TimeUnit.SECONDS);
  }

  private void assertEachOnce(java.util.Map<String, java.util.concurrent.atomic.AtomicInteger>
      handled, List<Message> expected) {
    Await.until(WAIT, "every record handled", () -> expected.stream()
        .allMatch(m -> handled.containsKey(m.id())));
    Await.until(WAIT, "everything committed", () -> Long.valueOf(20).equals(
        KafkaTestSupport.committedOffsets(groupOf.get(), topicOf.get())
            .get(0)));
    handled.forEach((id, n) -> assertThat(n.get()).as("handlings of %s", id).isEqualTo(1));
  }

  private final java.util.concurrent.atomic.AtomicReference<String> groupOf =
      new java.util.concurrent.atomic.AtomicReference<>();
  private final java.util.concurrent.atomic.AtomicReference<String> topicOf =
      new java.util.concurrent.atomic.AtomicReference<>();

  private java.util.Map<String, java.util.concurrent.atomic.AtomicInteger> subscribe(String topic,
      String group) throws Exception {
    groupOf.set(group);
    topicOf.set(topic);
    java.util.Map<String, java.util.concurrent.atomic.AtomicInteger> handled =
        new java.util.concurrent.ConcurrentHashMap<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.UNORDERED).build(), d -> handled.computeIfAbsent(d.message().id(),
            k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet());
    return handled;
  }

  @Test
  @DisplayName("offsets committed by another tool, with metadata that is not relaykit's or names"
      + " another base: every record past the offset runs")
  void foreignMetadataSkipsNothing() throws Exception {
    String topic = newTopic("review-foreign-meta", 1);
    String group = topic + "-g";
    List<Message> all = KafkaTestSupport.numberedMessages(20, i -> "k" + i);
    KafkaTestSupport.publishAll(topic, all);
    // another base than the committed offset (an older commit's), then a foreign checkpoint
    commitWithMetadata(group, topic, 3, FinishedAbove.of(2, 15, new long[] {2}, null).encode());
    var handled = subscribe(topic, group);
    assertEachOnce(handled, all.subList(3, 20));
    assertThat(handled).hasSize(17);
  }

  @Test
  @DisplayName("a topic deleted and created again under the same name: metadata committed for the"
      + " old one skips none of the new records")
  void recreatedTopicSkipsNothing() throws Exception {
    String topic = newTopic("review-recreated", 1);
    String group = topic + "-g";
    KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(20, i -> "old" + i));
    // the old topic's hand-over: 5 open, 6..14 finished
    commitWithMetadata(group, topic, 5, FinishedAbove.of(5, 15, new long[] {5}, null).encode());
    KafkaTestBroker.admin().deleteTopics(List.of(topic)).all()
        .get(30, java.util.concurrent.TimeUnit.SECONDS);
    Await.until(WAIT, "the topic created again", () -> {
      try {
        KafkaTestBroker.createTopic(topic, 1);
        return true;
      } catch (IllegalStateException e) {
        return false; // still being deleted
      }
    });
    List<Message> fresh = KafkaTestSupport.numberedMessages(20, i -> "new" + i);
    KafkaTestSupport.publishAll(topic, fresh);
    var handled = subscribe(topic, group);
    assertEachOnce(handled, fresh);
    assertThat(handled).hasSize(20);
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"timeout", "auth"})
  @DisplayName("the read of committed offsets at assignment fails: the records the previous owner"
      + " named finished run again, nothing is skipped and nothing stalls")
  void failedHandOverReadRunsAgain(String fault) throws Exception {
    String topic = newTopic("review-read-fails-" + fault, 1);
    String group = topic + "-g";
    List<Message> all = KafkaTestSupport.numberedMessages(20, i -> "k" + i);
    KafkaTestSupport.publishAll(topic, all);
    // a previous owner's hand-over: 5 open, 6..14 finished
    commitWithMetadata(group, topic, 5, FinishedAbove.of(5, 15, new long[] {5}, null).encode());
    KafkaConsumerRuntime.HAND_OVER_READ_FAULTS.put(group, () -> fault.equals("timeout")
        ? new org.apache.kafka.common.errors.TimeoutException("injected")
        : new org.apache.kafka.common.errors.GroupAuthorizationException("injected"));
    try {
      var handled = subscribe(topic, group);
      assertEachOnce(handled, all.subList(5, 20));
      assertThat(handled).hasSize(15);
    } finally {
      KafkaConsumerRuntime.HAND_OVER_READ_FAULTS.remove(group);
    }
  }

  @Test
  @DisplayName("control: the same hand-over read without a fault passes over the finished records")
  void handOverReadPassesOverFinished() throws Exception {
    String topic = newTopic("review-read-ok", 1);
    String group = topic + "-g";
    List<Message> all = KafkaTestSupport.numberedMessages(20, i -> "k" + i);
    KafkaTestSupport.publishAll(topic, all);
    commitWithMetadata(group, topic, 5, FinishedAbove.of(5, 15, new long[] {5}, null).encode());
    var handled = subscribe(topic, group);
    List<Message> expected = new java.util.ArrayList<>(all.subList(15, 20));
    expected.add(all.get(5));
    assertEachOnce(handled, expected);
    assertThat(handled).hasSize(6);
  }
}

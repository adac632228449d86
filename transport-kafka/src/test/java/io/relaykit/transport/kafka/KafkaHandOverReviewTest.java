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
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An independent attack on the graceful hand-over: per-key order when a key is parked for its
 * retry at the moment its partition changes owner.
 */
@DisplayName("Kafka hand-over review: per-key order of a parked key across a graceful close")
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
  @Disabled("known defect: a graceful hand-over does not carry parked keys; the next owner runs"
      + " the parked key's later record at once, ahead of the key's retry copy")
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
}

package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Kafka share groups on a real broker")
class KafkaShareGroupTest {

  private static KafkaTransportConfig config() {
    return KafkaTestSupport.config().groupType(KafkaTransportConfig.GroupType.SHARE)
        .closeTimeout(Duration.ofSeconds(5)).build();
  }

  private static SubscriptionSpec.Builder spec(String topic, String group) {
    return SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED)
        .concurrency(4).maxInFlight(8).handlerTimeout(Duration.ofSeconds(20))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(100))).build());
  }

  @Test
  @DisplayName("one partition, three share members: all three receive records of that partition,"
      + " and every record is handled")
  void threeMembersShareOnePartition() {
    String topic = KafkaTestSupport.newTopic("share-three", 1);
    String group = topic + "-g";
    List<Message> messages = KafkaTestSupport.numberedMessages(300, i -> "k" + (i % 30));
    Map<Integer, Set<String>> byMember = new ConcurrentHashMap<>();
    CountDownLatch allJoined = new CountDownLatch(1);
    List<KafkaShareSubscription> subs = new ArrayList<>();
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(config())) {
      for (int m = 0; m < 3; m++) {
        int member = m;
        subs.add(subscriber.subscribe(spec(topic, group).build(), d -> {
          byMember.computeIfAbsent(member, k -> ConcurrentHashMap.newKeySet())
              .add(d.message().id());
          if (byMember.size() == 3) {
            allJoined.countDown();
          }
          // each member holds its records until all three have one: none can take them all
          allJoined.await(30, TimeUnit.SECONDS);
        }));
      }
      KafkaTestSupport.publishAll(topic, messages);
      Await.until(Duration.ofSeconds(60), "every record handled", () -> {
        Set<String> all = new java.util.HashSet<>();
        byMember.values().forEach(all::addAll);
        return all.size() == messages.size();
      });
      assertThat(byMember).as("records per member").hasSize(3);
      byMember.values().forEach(ids -> assertThat(ids).isNotEmpty());
      Await.until(Duration.ofSeconds(30), "ACCEPTs confirmed",
          () -> subs.stream().mapToLong(KafkaShareSubscription::accepted).sum()
              >= messages.size());
      subs.forEach(s -> assertThat(s.deliveryCountLimit()).isEqualTo(5));
    }
  }

  @Test
  @DisplayName("a handler running past its acquisition lock (1 s) keeps it by RENEW: no other"
      + " member gets the record, and it is accepted once it finishes")
  void longHandlerRenewsItsLock() throws Exception {
    String topic = KafkaTestSupport.newTopic("share-renew", 1);
    String group = topic + "-g";
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    KafkaTestBroker.admin().incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
        new ConfigEntry("share.record.lock.duration.ms", "1000"), AlterConfigOp.OpType.SET))))
        .all().get(30, TimeUnit.SECONDS);
    CountDownLatch release = new CountDownLatch(1);
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(config())) {
      KafkaShareSubscription a = subscriber.subscribe(spec(topic, group).build(), d -> {
        attempts.add(d.attempt());
        release.await(30, TimeUnit.SECONDS);
      });
      KafkaShareSubscription b = subscriber.subscribe(spec(topic, group).build(), d -> {
        attempts.add(d.attempt());
        release.await(30, TimeUnit.SECONDS);
      });
      KafkaTestSupport.publishAll(topic, List.of(KafkaTestSupport.message("k", 1)));
      Await.until(Duration.ofSeconds(30), "the record is running", () -> attempts.size() == 1);
      Await.holds(Duration.ofMillis(3000), "three lock periods: nobody gets it again",
          () -> attempts.size() == 1);
      release.countDown();
      Await.until(Duration.ofSeconds(30), "accepted",
          () -> a.accepted() + b.accepted() == 1);
      assertThat(attempts).containsExactly(1);
      assertThat(a.released() + b.released()).isZero();
    }
  }

  @Test
  @DisplayName("a retry copy whose send fails is not accepted: the record is RELEASEd, redelivered"
      + " as the next attempt, and nothing reaches the retry topic")
  void failedCopyReleases() {
    String topic = KafkaTestSupport.newTopic("share-release", 1);
    String group = topic + "-g";
    AtomicInteger sends = new AtomicInteger();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    KafkaTransportConfig config = config();
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(config,
        real -> (w, copy, what) -> sends.incrementAndGet() == 1
            ? CompletableFuture.failedFuture(
                new org.apache.kafka.common.errors.TimeoutException("injected: broker away"))
            : real.send(w, copy, what))) {
      KafkaShareSubscription s = subscriber.subscribe(spec(topic, group).build(), d -> {
        attempts.add(d.attempt());
        if (d.attempt() == 1) {
          throw new IllegalStateException("first attempt fails");
        }
      });
      KafkaTestSupport.publishAll(topic, List.of(KafkaTestSupport.message("k", 1)));
      Await.until(Duration.ofSeconds(30), "redelivered and accepted",
          () -> attempts.size() == 2 && s.accepted() == 1);
      assertThat(attempts).containsExactly(1, 2);
      assertThat(s.released()).isEqualTo(1);
      assertThat(sends).hasValue(1);
      assertThat(KafkaTestSupport.endOffset(config.retryTopic(topic, group), 0))
          .as("no retry copy was written").isZero();
    }
  }

  @Test
  @DisplayName("the share consumer's passthrough refuses the consumer settings a share consumer"
      + " refuses, naming the key; share-auto-offset-reset accepts earliest or latest only")
  void shareConfigRefusals() {
    for (String key : List.of("auto.offset.reset", "enable.auto.commit", "isolation.level",
        "session.timeout.ms", "group.protocol", "group.instance.id")) {
      assertThatThrownBy(() -> KafkaTestSupport.config().shareConsumerProperty(key, "x").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("shareConsumerProperty " + key);
    }
    assertThatThrownBy(() -> KafkaTestSupport.config()
        .shareConsumerProperty("share.acknowledgement.mode", "implicit").build())
        .hasMessageContaining("share.acknowledgement.mode");
    assertThatThrownBy(() -> KafkaTestSupport.config().shareAutoOffsetReset("none").build())
        .hasMessageContaining("shareAutoOffsetReset");
    KafkaTransportConfig ok = KafkaTestSupport.config()
        .shareConsumerProperty("fetch.max.wait.ms", "50").build();
    assertThat(ok.shareAutoOffsetReset()).isEqualTo("earliest");
    assertThat(ok.groupType()).isEqualTo(KafkaTransportConfig.GroupType.CONSUMER);
    assertThat(KafkaShareRuntime.consumerProperties(ok, spec("t", "g").build()))
        .containsEntry("share.acknowledgement.mode", "explicit")
        .containsEntry("fetch.max.wait.ms", "50")
        .containsEntry("max.poll.records", "8")
        .containsEntry("share.acquire.mode", "record_limit");
    assertThatThrownBy(() -> KafkaTestSupport.config()
        .shareConsumerProperty("share.acquire.mode", "batch_optimized").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("share.acquire.mode");
    assertThat(KafkaTestSupport.config().shareConsumerProperty("share.acquire.mode",
        "record_limit").build().shareConsumerProperties())
        .containsEntry("share.acquire.mode", "record_limit");
  }
}

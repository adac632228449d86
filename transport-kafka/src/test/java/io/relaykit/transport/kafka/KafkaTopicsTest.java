package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.Settings;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.tck.LogCapture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Provisioning of the source, retry and dead-letter topics through {@link KafkaTopics}. */
class KafkaTopicsTest {

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static int partitions(String topic) throws Exception {
    return KafkaTestBroker.admin().describeTopics(List.of(topic)).allTopicNames()
        .get(30, TimeUnit.SECONDS).get(topic).partitions().size();
  }

  private static String retentionMs(String topic) throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Config c = KafkaTestBroker.admin().describeConfigs(List.of(r)).all()
        .get(30, TimeUnit.SECONDS).get(r);
    return c.get("retention.ms").value();
  }

  private static KafkaTransportConfig.Builder creating(int partitions, Duration retention) {
    return KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5))
        .topics(new KafkaTopics(true, partitions, 1, retention));
  }

  @Nested
  @DisplayName("off by default")
  class Off {

    @Test
    @DisplayName("a missing source topic is refused, naming the property that would create it,"
        + " and nothing is created")
    void missingTopicNamesTheProperty() {
      String topic = KafkaTestBroker.uniqueTopic("topics-off");
      assertThatThrownBy(() -> clients.subscriber().subscribe(
          SubscriptionSpec.builder(topic, "g").build(), d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(topic)
          .hasMessageContaining("does not exist")
          .hasMessageContaining("relaykit.kafka.topics.create=true");
      assertThat(KafkaTestBroker.topicExists(topic)).isFalse();
      assertThat(KafkaTestBroker.topicExists(topic + ".g.retry")).isFalse();
    }
  }

  @Nested
  @DisplayName("creating")
  class Creating {

    @Test
    @DisplayName("a missing source is created with the configured partitions and retention; retry"
        + " and dead-letter topics get its partitions and the same retention; a second"
        + " subscribe changes nothing")
    void createsAllThree() throws Exception {
      String topic = KafkaTestBroker.uniqueTopic("topics-create");
      KafkaSubscriber subscriber = clients.subscriber(creating(3, Duration.ofHours(2)));
      KafkaTransportConfig config = subscriber.config();
      Subscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, "g").build(),
          d -> { });
      s.close(Duration.ofSeconds(5));

      String retry = config.retryTopic(topic, "g");
      String dlt = config.deadLetterTopic(topic, "g");
      for (String t : List.of(topic, retry, dlt)) {
        assertThat(partitions(t)).as(t).isEqualTo(3);
        assertThat(retentionMs(t)).as(t).isEqualTo(Long.toString(Duration.ofHours(2).toMillis()));
      }

      KafkaSubscriber again = clients.subscriber(creating(5, Duration.ofHours(5)));
      again.subscribe(SubscriptionSpec.builder(topic, "g").build(), d -> { })
          .close(Duration.ofSeconds(5));
      for (String t : List.of(topic, retry, dlt)) {
        assertThat(partitions(t)).as(t + " left as it was").isEqualTo(3);
        assertThat(retentionMs(t)).as(t).isEqualTo(Long.toString(Duration.ofHours(2).toMillis()));
      }
    }

    @Test
    @DisplayName("an existing topic with fewer partitions than configured is reported in one"
        + " WARN line and not changed")
    void fewerPartitionsReported() throws Exception {
      String topic = KafkaTestBroker.uniqueTopic("topics-fewer");
      KafkaTestBroker.createTopic(topic, 1);
      try (LogCapture logs = LogCapture.open()) {
        clients.subscriber(creating(4, null))
            .subscribe(SubscriptionSpec.builder(topic, "g").build(), d -> { })
            .close(Duration.ofSeconds(5));

        assertThat(logs.lines().stream().filter(l -> l.contains("topic " + topic + " has 1")))
            .singleElement().asString().contains("WARNING")
            .contains("fewer than the 4 of relaykit.kafka.topics.partitions")
            .contains("left as it is");
      }
      assertThat(partitions(topic)).isEqualTo(1);
      assertThat(partitions(topic + ".g.retry")).isEqualTo(1);
    }

    @Test
    @DisplayName("two subscribers creating the same missing topic at once both succeed")
    void concurrentTwins() throws Exception {
      String topic = KafkaTestBroker.uniqueTopic("topics-twins");
      KafkaSubscriber a = clients.subscriber(creating(2, null));
      KafkaSubscriber b = clients.subscriber(creating(2, null));
      CyclicBarrier start = new CyclicBarrier(2);
      List<CompletableFuture<Subscription>> both = new ArrayList<>();
      int i = 0;
      for (KafkaSubscriber sub : List.of(a, b)) {
        String group = "g" + i++;
        both.add(CompletableFuture.supplyAsync(() -> {
          try {
            start.await(30, TimeUnit.SECONDS);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          return sub.subscribe(SubscriptionSpec.builder(topic, group).build(), d -> { });
        }));
      }
      for (CompletableFuture<Subscription> f : both) {
        f.get(90, TimeUnit.SECONDS).close(Duration.ofSeconds(5));
      }
      assertThat(partitions(topic)).isEqualTo(2);
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("relaykit.kafka.topics.* keys are read; defaults are off and the broker's")
    void keys() {
      Properties p = new Properties();
      p.setProperty("relaykit.kafka.bootstrap-servers", "localhost:1");
      p.setProperty("relaykit.kafka.topics.create", "true");
      p.setProperty("relaykit.kafka.topics.partitions", "6");
      p.setProperty("relaykit.kafka.topics.replication-factor", "3");
      p.setProperty("relaykit.kafka.topics.retention", "7d");
      assertThat(KafkaTransportConfig.from(Settings.from(p, Map.of())).topics())
          .isEqualTo(new KafkaTopics(true, 6, 3, Duration.ofDays(7)));

      Properties bare = new Properties();
      bare.setProperty("relaykit.kafka.bootstrap-servers", "localhost:1");
      assertThat(KafkaTransportConfig.from(Settings.from(bare, Map.of())).topics())
          .isEqualTo(KafkaTopics.defaults()).isEqualTo(new KafkaTopics(false, 0, 0, null));
    }

    @Test
    @DisplayName("invalid values are refused naming the key or field")
    void invalid() {
      Properties p = new Properties();
      p.setProperty("relaykit.kafka.bootstrap-servers", "localhost:1");
      p.setProperty("relaykit.kafka.topics.partitions", "-2");
      assertThatThrownBy(() -> KafkaTransportConfig.from(Settings.from(p, Map.of())))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.kafka.topics.partitions");
      assertThatThrownBy(() -> new KafkaTopics(true, 1, 40_000, null))
          .hasMessageContaining("replicationFactor");
      assertThatThrownBy(() -> new KafkaTopics(true, 1, 1, Duration.ZERO))
          .hasMessageContaining("retention");
    }
  }
}

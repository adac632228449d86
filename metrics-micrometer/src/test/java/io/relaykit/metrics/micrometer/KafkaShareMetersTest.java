package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.tck.Await;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaShareSubscription;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The scripted run on a Kafka share group: the share runtime reports delivered, acked and expired
 * steps and the handler timer like the consumer-group runtime, and its retry reader counts under
 * the destination too. A share group has no consumer lag per partition to settle or check.
 */
@DisplayName("meters after a scripted run on a Kafka share group (the in-JVM broker)")
class KafkaShareMetersTest extends KafkaMetersTest {

  @Override
  KafkaTransportConfig.Builder configure(KafkaTransportConfig.Builder builder) {
    return builder.groupType(KafkaTransportConfig.GroupType.SHARE)
        .closeTimeout(Duration.ofSeconds(5));
  }

  @Override
  Subscriber subscriber() {
    KafkaShareSubscriber s = KafkaShareSubscriber.create(config);
    open.add(s);
    return s;
  }

  @Override
  void settle(String destination, String group) {}

  @Override
  void afterRun(String destination, String group) {
    assertThat(registry.find("relaykit.outbox.backlog").meters()).as("outbox backlog").isEmpty();
    Await.until(WAIT, "accepts exported", () -> {
      var c = registry.find("relaykit.share.acknowledged").tags(DESTINATION, destination, GROUP,
          group, "type", "accept").counter();
      return c != null && c.count() >= 1;
    });
  }

  private double count(String name, String destination, String group, String... tags) {
    var c = registry.find(name).tags(DESTINATION, destination, GROUP, group).tags(tags)
        .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  @DisplayName("a real share group: renewals of handlers running past a third of their lock,"
      + " and accepts by type, exported")
  void renewalsAndAcknowledgementsExported() throws Exception {
    String topic = destination();
    String group = topic + "-g";
    KafkaTestBroker.admin().incrementalAlterConfigs(Map.of(
        new ConfigResource(ConfigResource.Type.GROUP, group), List.of(new AlterConfigOp(
            new ConfigEntry("share.record.lock.duration.ms", "1000"),
            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
    CountDownLatch letGo = new CountDownLatch(1);
    KafkaShareSubscription s = (KafkaShareSubscription) subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).concurrency(2).maxInFlight(2)
            .handlerTimeout(Duration.ofMinutes(1)).build(),
        d -> letGo.await(60, TimeUnit.SECONDS));
    try (KafkaPublisher p = KafkaPublisher.create(config)) {
      p.publish(topic, Message.builder().type("t").key("a").payload("1").build())
          .get(30, TimeUnit.SECONDS);
      p.publish(topic, Message.builder().type("t").key("b").payload("2").build())
          .get(30, TimeUnit.SECONDS);
    }
    Await.until(WAIT, "a renewal exported", () ->
        count("relaykit.share.renewed", topic, group) >= 1);
    letGo.countDown();
    Await.until(WAIT, "two accepts exported", () ->
        count("relaykit.share.acknowledged", topic, group, "type", "accept") == 2);
    assertThat(count("relaykit.share.acknowledged", topic, group, "type", "release")).isZero();
    assertThat(count("relaykit.share.lock.lost", topic, group)).isZero();
    assertThat(s.accepted()).isEqualTo(2);
  }
}

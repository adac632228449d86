package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaTransportModule and the kafka transport backend")
class KafkaTransportModuleTest {

  private static RelayKitConfig config(String... keyValues) {
    Properties p = new Properties();
    for (int i = 0; i < keyValues.length; i += 2) {
      p.setProperty(keyValues[i], keyValues[i + 1]);
    }
    return RelayKitConfig.from(p);
  }

  @Test
  @DisplayName("relaykit.transport=kafka binds Publisher and Subscriber to one Kafka publisher and"
      + " subscriber, and the publisher reaches the broker")
  void transportKafkaBindsPublisherAndSubscriber() throws Exception {
    Injector injector = Guice.createInjector(new RelayKitModule(config(
        "relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", KafkaTestBroker.bootstrapServers(),
        "relaykit.kafka.client-id-prefix", "guice-test")));
    Publisher publisher = injector.getInstance(Publisher.class);
    Subscriber subscriber = injector.getInstance(Subscriber.class);
    try {
      assertThat(publisher).isInstanceOf(KafkaPublisher.class)
          .isSameAs(injector.getInstance(KafkaPublisher.class))
          .isSameAs(injector.getInstance(Publisher.class));
      assertThat(subscriber).isInstanceOf(KafkaSubscriber.class)
          .isSameAs(injector.getInstance(KafkaSubscriber.class));

      String topic = KafkaTestBroker.uniqueTopic("guice");
      KafkaTestBroker.createTopic(topic, 1);
      Message m = Message.builder().type("t").key("k").payload("via guice").build();
      PublishReceipt receipt = publisher.publish(topic, m).get(30, TimeUnit.SECONDS);
      assertThat(receipt.position()).isEqualTo(topic + "-0@0");
      assertThat(KafkaTestSupport.readAll(topic, 1)).hasSize(1);
    } finally {
      publisher.close();
      subscriber.close();
    }
  }

  @Test
  @DisplayName("relaykit.kafka.group-type=share binds Subscriber to the share subscriber; the"
      + " share consumer passthrough refuses a consumer-group setting, naming the key")
  void groupTypeShareBindsTheShareSubscriber() {
    Injector injector = Guice.createInjector(new RelayKitModule(config(
        "relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", "k:9092",
        "relaykit.kafka.group-type", "share",
        "relaykit.kafka.share-consumer.fetch.max.wait.ms", "50")));
    Subscriber subscriber = injector.getInstance(Subscriber.class);
    try {
      assertThat(subscriber).isInstanceOf(KafkaShareSubscriber.class)
          .isSameAs(injector.getInstance(KafkaShareSubscriber.class));
    } finally {
      subscriber.close();
    }
    assertThatThrownBy(() -> new RelayKitModule(config("relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", "k:9092",
        "relaykit.kafka.share-consumer.enable.auto.commit", "false")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shareConsumerProperty enable.auto.commit");
  }

  @Test
  @DisplayName("missing or invalid relaykit.kafka settings fail when the module is built, naming"
      + " the key")
  void badSettingsFailEarly() {
    assertThatThrownBy(() -> new RelayKitModule(config("relaykit.transport", "kafka")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.kafka.bootstrap-servers is required")
        .hasMessageContaining("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS");
    assertThatThrownBy(() -> new RelayKitModule(config("relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", "k:9092", "relaykit.kafka.poll-timeout", "fast")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.kafka.poll-timeout");
  }

  @Test
  @DisplayName("the module can be installed on its own and exposes only the publisher and"
      + " the two subscribers")
  void standaloneModule() {
    KafkaTransportConfig config = KafkaTransportConfig.builder().bootstrapServers("k:9092")
        .build();
    Injector injector = Guice.createInjector(new KafkaTransportModule(config));
    List<String> exposed = injector.getAllBindings().keySet().stream()
        .map(k -> k.getTypeLiteral().getRawType().getName())
        .filter(n -> n.startsWith("io.relaykit")).toList();
    assertThat(exposed).containsExactlyInAnyOrder(KafkaPublisher.class.getName(),
        KafkaSubscriber.class.getName(), KafkaShareSubscriber.class.getName());
    assertThat(injector.getInstance(KafkaSubscriber.class))
        .isSameAs(injector.getInstance(KafkaSubscriber.class));
    assertThatThrownBy(() -> new KafkaTransportModule(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("config");
  }
}

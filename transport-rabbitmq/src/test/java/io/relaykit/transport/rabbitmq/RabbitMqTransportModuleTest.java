package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import com.rabbitmq.client.Connection;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.Backends;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMqTransportModule and its backend registration")
class RabbitMqTransportModuleTest {

  @Test
  @DisplayName("relaykit.transport=rabbitmq binds Publisher and Subscriber to one RabbitMQ pair"
      + " configured from relaykit.rabbitmq.*, and messages flow through the broker")
  void selectedByConfiguration() throws Exception {
    String connectionName = TestBroker.unique("guice");
    RelayKitConfig config = RelayKitConfig.builder().transport("rabbitmq")
        .set("relaykit.rabbitmq.uri", TestBroker.config().build().uri())
        .set("relaykit.rabbitmq.connection-name", connectionName)
        .set("relaykit.rabbitmq.confirm-window", "64")
        .set("relaykit.rabbitmq.delay-levels", "200ms, 5s")
        .build();
    Queue<String> timed = new ConcurrentLinkedQueue<>();
    MetricsListener metrics = new MetricsListener() {
      @Override
      public void handlerDuration(String destination, String group, Duration duration,
          boolean failed) {
        timed.add(destination + " " + group + " failed=" + failed);
      }
    };
    Injector injector = Guice.createInjector(new RelayKitModule(config),
        binder -> RelayKitModule.override(binder, MetricsListener.class).toInstance(metrics));
    Publisher publisher = injector.getInstance(Publisher.class);
    Subscriber subscriber = injector.getInstance(Subscriber.class);
    String destination = TestBroker.unique("guice");
    RabbitMqTransportConfig used = RabbitMqTransportBackend.transportConfig(config);
    try {
      assertThat(publisher).isInstanceOf(RabbitMqPublisher.class)
          .isSameAs(injector.getInstance(Publisher.class));
      assertThat(subscriber).isInstanceOf(RabbitMqSubscriber.class);
      assertThat(used.confirmWindow()).isEqualTo(64);
      assertThat(used.delayLevels()).containsExactly(Duration.ofMillis(200),
          Duration.ofSeconds(5));
      assertThat(((RabbitMqPublisher) publisher).connectionName())
          .isEqualTo(connectionName + "-publisher");

      Queue<String> got = new ConcurrentLinkedQueue<>();
      subscriber.subscribe(SubscriptionSpec.builder(destination, "g").build(),
          d -> got.add(d.message().id()));
      publisher.publish(destination, Message.builder().id("via-guice").type("t").payload("p")
          .build()).join();
      Await.until(Duration.ofSeconds(30), "the message handled", () -> got.contains("via-guice"));
      Await.until(Duration.ofSeconds(10), "the handler timed for the injector's MetricsListener",
          () -> !timed.isEmpty());
      assertThat(timed).containsExactly(destination + " g failed=false");
    } finally {
      subscriber.close();
      publisher.close();
      try (Connection admin = TestBroker.connect(used)) {
        RabbitMqTopology.of(used).delete(admin, destination, "g", true);
      }
    }
  }

  @Test
  @DisplayName("the backend is discovered through ServiceLoader under the name rabbitmq")
  void discovered() {
    BackendModuleProvider p =
        Backends.discover().provider(BackendModuleProvider.Kind.TRANSPORT, "rabbitmq");
    assertThat(p).isInstanceOf(RabbitMqTransportBackend.class);
  }

  @Test
  @DisplayName("invalid or unknown relaykit.rabbitmq keys fail naming the key and value")
  void badConfiguration() {
    RabbitMqTransportBackend backend = new RabbitMqTransportBackend();
    assertThatThrownBy(() -> backend.module(RelayKitConfig.builder()
        .set("relaykit.rabbitmq.confirm-window", "zero").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.rabbitmq.confirm-window").hasMessageContaining("zero");
    assertThatThrownBy(() -> backend.module(RelayKitConfig.builder()
        .set("relaykit.rabbitmq.delay-levels", "1s, soon").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.rabbitmq.delay-levels").hasMessageContaining("soon");
    assertThatThrownBy(() -> backend.module(RelayKitConfig.builder()
        .set("relaykit.rabbitmq.uri", "http://example").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("uri").hasMessageContaining("amqp://");
    assertThatThrownBy(() -> backend.module(RelayKitConfig.builder()
        .set("relaykit.rabbitmq.confirm-windw", "5").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.rabbitmq.confirm-windw");
  }
}

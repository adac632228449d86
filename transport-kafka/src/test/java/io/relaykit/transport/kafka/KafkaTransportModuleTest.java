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
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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

  /** Records what reaches it as short lines: "lag topic group=n", "handler topic group". */
  private static final class Heard implements MetricsListener {
    final List<String> lines = new CopyOnWriteArrayList<>();

    @Override
    public void consumerLag(String destination, String group, long lag) {
      lines.add("lag " + destination + " " + group + "=" + lag);
    }

    @Override
    public void partitionLag(String destination, String group, int partition, long lag) {
      lines.add("partition lag " + destination + " " + group + " " + partition + "=" + lag);
    }

    @Override
    public void handlerDuration(String destination, String group, Duration duration,
        boolean failed) {
      lines.add("handler " + destination + " " + group + " failed=" + failed);
    }
  }

  @Test
  @DisplayName("through RelayKitModule the Kafka publisher and subscriber report to the"
      + " injector's LifecycleListener and MetricsListener; a spec's own listener replaces the"
      + " injector's for that subscription's gauges and handler timer")
  void injectorListenersReachKafka() throws Exception {
    List<String> events = new CopyOnWriteArrayList<>();
    LifecycleListener listener = e -> events.add(e.stage() + " " + e.where());
    Heard injected = new Heard();
    Heard own = new Heard();
    Injector injector = Guice.createInjector(new RelayKitModule(config(
        "relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", KafkaTestBroker.bootstrapServers(),
        "relaykit.kafka.commit-interval", "100ms",
        "relaykit.kafka.client-id-prefix", "guice-metrics")), binder -> {
          RelayKitModule.override(binder, LifecycleListener.class).toInstance(listener);
          RelayKitModule.override(binder, MetricsListener.class).toInstance(injected);
        });
    Publisher publisher = injector.getInstance(Publisher.class);
    Subscriber subscriber = injector.getInstance(Subscriber.class);
    String topic = KafkaTestBroker.uniqueTopic("guice-metrics");
    KafkaTestBroker.createTopic(topic, 1);
    try {
      Subscription plain = subscriber.subscribe(SubscriptionSpec.builder(topic, "plain")
          .ordering(OrderingMode.UNORDERED).concurrency(1).build(), d -> { });
      Subscription mine = subscriber.subscribe(SubscriptionSpec.builder(topic, "mine")
          .ordering(OrderingMode.UNORDERED).concurrency(1).metrics(own).build(), d -> { });
      for (int i = 0; i < 3; i++) {
        publisher.publish(topic, Message.builder().type("t").key("k" + i).payload("m" + i)
            .build()).get(30, TimeUnit.SECONDS);
      }
      Await.until(Duration.ofSeconds(60), "both groups handled all three, lag sampled at 0",
          () -> count(injected.lines, "handler " + topic + " plain failed=false") == 3
              && count(own.lines, "handler " + topic + " mine failed=false") == 3
              && injected.lines.contains("lag " + topic + " plain=0")
              && own.lines.contains("lag " + topic + " mine=0")
              && own.lines.contains("partition lag " + topic + " mine 0=0"));
      assertThat(injected.lines).as("the injector's listener hears nothing of \"mine\"")
          .noneMatch(l -> l.contains(" mine"));
      assertThat(own.lines).as("the spec's listener hears nothing of \"plain\"")
          .noneMatch(l -> l.contains(" plain"));
      Await.until(Duration.ofSeconds(30), "the lifecycle events",
          () -> count(events, "ACKED " + topic) == 6);
      assertThat(count(events, "PUBLISHED " + topic)).isEqualTo(3);
      assertThat(count(events, "CONFIRMED " + topic)).isEqualTo(3);
      assertThat(count(events, "DELIVERED " + topic)).isEqualTo(6);
      plain.close(Duration.ofSeconds(10));
      mine.close(Duration.ofSeconds(10));
    } finally {
      publisher.close();
      subscriber.close();
    }
  }

  private static long count(List<String> lines, String line) {
    return lines.stream().filter(line::equals).count();
  }

  @Test
  @DisplayName("the config's own listeners and the injector's both hear, each once; without"
      + " bindings the config's alone")
  void joinedListeners() {
    Heard mine = new Heard();
    Heard bound = new Heard();
    assertThat(KafkaTransportModule.joined(mine, MetricsListener.noop())).isSameAs(mine);
    assertThat(KafkaTransportModule.joined(mine, mine)).isSameAs(mine);
    assertThat(KafkaTransportModule.joined(MetricsListener.noop(), bound)).isSameAs(bound);
    MetricsListener both = KafkaTransportModule.joined(mine, bound);
    both.handlerDuration("t", "g", Duration.ZERO, false);
    assertThat(mine.lines).containsExactly("handler t g failed=false");
    assertThat(bound.lines).containsExactly("handler t g failed=false");

    List<String> events = new CopyOnWriteArrayList<>();
    LifecycleListener l1 = e -> events.add("l1");
    LifecycleListener l2 = e -> events.add("l2");
    assertThat(KafkaTransportModule.joined(KafkaTransportConfig.NO_LISTENER, l2)).isSameAs(l2);
    assertThat(KafkaTransportModule.joined(l1, LifecycleListener.noop())).isSameAs(l1);
    KafkaTransportModule.joined(l1, l2).on(new LifecycleEvent(LifecycleEvent.Stage.ACKED, "m",
        null, "t", java.time.Instant.EPOCH, ""));
    assertThat(events).containsExactly("l1", "l2");

    KafkaTransportConfig config = KafkaTransportConfig.builder().bootstrapServers("k:9092")
        .metrics(mine).build();
    Injector standalone = Guice.createInjector(new KafkaTransportModule(config));
    assertThat(standalone.getInstance(KafkaSubscriber.class)).isNotNull();
  }

  @Test
  @DisplayName("through RelayKitModule the transport takes the injector's clock; a clock the"
      + " config set itself wins")
  void injectorClockReachesKafka() {
    io.relaykit.tck.FakeClock fake = new io.relaykit.tck.FakeClock(
        java.time.Instant.parse("2030-01-01T00:00:00Z"));
    Injector injector = Guice.createInjector(new RelayKitModule(config(
        "relaykit.transport", "kafka",
        "relaykit.kafka.bootstrap-servers", "k:9092")), binder ->
            RelayKitModule.override(binder, java.time.InstantSource.class).toInstance(fake));
    KafkaSubscriber subscriber = injector.getInstance(KafkaSubscriber.class);
    try {
      assertThat(subscriber.config().clock()).isSameAs(fake);
    } finally {
      subscriber.close();
    }
    java.time.InstantSource own = java.time.InstantSource.fixed(java.time.Instant.EPOCH);
    assertThat(KafkaTransportModule.clock(own, fake)).isSameAs(own);
    assertThat(KafkaTransportModule.clock(java.time.InstantSource.system(), fake)).isSameAs(fake);
  }
}

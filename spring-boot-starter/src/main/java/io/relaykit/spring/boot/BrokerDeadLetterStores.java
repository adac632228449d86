package io.relaykit.spring.boot;

import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.transport.kafka.KafkaDeadLetterStore;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqDeadLetterStore;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The dead-letter topics (Kafka) or queues (RabbitMQ) of the application's {@link
 * RelaykitListener} subscriptions, one {@link DeadLetterSource} per destination and group, each
 * opened on first use (a Kafka producer; a RabbitMQ connection and publisher, after declaring the
 * group's topology) and closed with this bean. On the in-process transport there are none: its
 * subscriptions dead-letter into relaykit's own store.
 */
final class BrokerDeadLetterStores implements AutoCloseable {

  private static final ClassLoader LOADER = BrokerDeadLetterStores.class.getClassLoader();
  private static final boolean KAFKA = ClassUtils.isPresent(
      "io.relaykit.transport.kafka.KafkaDeadLetterStore", LOADER);
  private static final boolean RABBITMQ = ClassUtils.isPresent(
      "io.relaykit.transport.rabbitmq.RabbitMqDeadLetterStore", LOADER);

  private final Supplier<List<SubscriptionSpec>> specs;
  private final Function<SubscriptionSpec, DeadLetterSource> opener;
  private final Map<List<String>, DeadLetterSource> sources = new LinkedHashMap<>();
  private boolean closed;

  BrokerDeadLetterStores(Supplier<List<SubscriptionSpec>> specs,
      Function<SubscriptionSpec, DeadLetterSource> opener) {
    this.specs = specs;
    this.opener = opener;
  }

  /**
   * The broker stores of the application's transport, or none on the in-process transport.
   *
   * @param beans where the transport's config and the listener registry are looked up
   * @param listener told of each replay
   */
  static BrokerDeadLetterStores of(BeanFactory beans, LifecycleListener listener) {
    Supplier<List<SubscriptionSpec>> specs = () -> {
      RelaykitListenerRegistry registry = beans.getBeanProvider(RelaykitListenerRegistry.class)
          .getIfUnique();
      return registry == null ? List.of() : registry.specs();
    };
    Function<SubscriptionSpec, DeadLetterSource> opener = null;
    if (KAFKA) {
      opener = Kafka.opener(beans);
    }
    if (opener == null && RABBITMQ) {
      opener = RabbitMq.opener(beans, listener);
    }
    return new BrokerDeadLetterStores(specs, opener);
  }

  /** One source per destination and group of the subscriptions, in the order they start. */
  synchronized List<DeadLetterSource> sources() {
    if (opener == null || closed) {
      return List.of();
    }
    List<DeadLetterSource> out = new ArrayList<>();
    for (SubscriptionSpec spec : specs.get()) {
      List<String> key = List.of(spec.destination(), spec.group());
      DeadLetterSource s = sources.get(key);
      if (s == null) {
        s = opener.apply(spec);
        sources.put(key, s);
      }
      if (!out.contains(s)) {
        out.add(s);
      }
    }
    return out;
  }

  @Override
  public synchronized void close() {
    closed = true;
    sources.values().forEach(DeadLetterSource::close);
    sources.clear();
  }

  /** Loaded only when relaykit-kafka is on the class path. */
  private static final class Kafka {
    static Function<SubscriptionSpec, DeadLetterSource> opener(BeanFactory beans) {
      KafkaTransportConfig config = beans.getBeanProvider(KafkaTransportConfig.class)
          .getIfUnique();
      if (config == null) {
        return null;
      }
      return spec -> {
        String topic = config.deadLetterTopic(spec.destination(), spec.group());
        return DeadLetterSource.owned("kafka:" + topic,
            () -> KafkaDeadLetterStore.forSubscription(config, spec.destination(), spec.group()),
            KafkaDeadLetterStore::replay,
            "kafka:" + topic + " cannot remove a single dead letter: retention is the broker's"
                + " (set retention.ms or retention.bytes on topic " + topic + "); a replay"
                + " resends the dead letter and hides it from this listing",
            "the broker's: retention.ms or retention.bytes on topic " + topic);
      };
    }
  }

  /** Loaded only when relaykit-rabbitmq is on the class path. */
  private static final class RabbitMq {
    static Function<SubscriptionSpec, DeadLetterSource> opener(BeanFactory beans,
        LifecycleListener listener) {
      RabbitMqTransportConfig config = beans.getBeanProvider(RabbitMqTransportConfig.class)
          .getIfUnique();
      if (config == null) {
        return null;
      }
      RabbitMqTopology topology = RabbitMqTopology.of(config);
      return spec -> DeadLetterSource.owned(
          "rabbitmq:" + topology.queues(spec.destination(), spec.group()).deadLetterQueue(),
          () -> RabbitMqDeadLetterStore.create(config, spec.destination(), spec.group(),
              spec.inbound(), listener, InstantSource.system()),
          RabbitMqDeadLetterStore::replay, null, null);
    }
  }
}

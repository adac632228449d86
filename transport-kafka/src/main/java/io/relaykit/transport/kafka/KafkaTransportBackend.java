package io.relaykit.transport.kafka;

import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;

/**
 * The {@code kafka} transport for {@code relaykit.transport=kafka}: Publisher and Subscriber on
 * Kafka, configured from the {@code relaykit.kafka.*} settings (see {@link
 * KafkaTransportConfig#from(io.relaykit.config.Settings)}, declared by {@link KafkaConfigKeys}). Registered in {@code
 * META-INF/services/io.relaykit.guice.BackendModuleProvider}; cheap to construct.
 */
public final class KafkaTransportBackend implements BackendModuleProvider {
  /** Created by {@link java.util.ServiceLoader}; holds no state. */
  public KafkaTransportBackend() {}

  /** The prefix of this backend's settings. */
  public static final String SECTION = "relaykit.kafka.";

  @Override
  public Kind kind() {
    return Kind.TRANSPORT;
  }

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public Module module(RelayKitConfig config) {
    KafkaTransportConfig kafka = KafkaTransportConfig.from(config.settings());
    return binder -> {
      binder.install(new KafkaTransportModule(kafka));
      RelayKitModule.override(binder, Publisher.class).to(KafkaPublisher.class);
      // relaykit.kafka.group-type picks the group kind: consumer groups or share groups.
      RelayKitModule.override(binder, Subscriber.class).to(
          kafka.groupType() == KafkaTransportConfig.GroupType.SHARE
              ? KafkaShareSubscriber.class : KafkaSubscriber.class);
    };
  }
}

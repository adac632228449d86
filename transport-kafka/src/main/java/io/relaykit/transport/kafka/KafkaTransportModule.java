package io.relaykit.transport.kafka;

import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;

/**
 * Guice wiring of the Kafka transport: binds one {@link KafkaPublisher}, one {@link
 * KafkaSubscriber} and one {@link KafkaShareSubscriber} on a {@link KafkaTransportConfig}, and exposes only those three. To make them the
 * deployment's {@link io.relaykit.message.Publisher} and {@link io.relaykit.message.Subscriber},
 * choose {@code relaykit.transport=kafka} (see {@link KafkaTransportBackend}); an application that
 * wires by hand installs this module directly.
 *
 * <p>Nothing connects until the publisher or subscriber is first injected; the injector's owner
 * closes them.
 */
public final class KafkaTransportModule extends PrivateModule {

  private final KafkaTransportConfig config;

  /**
   * A module binding the publisher and subscriber on {@code config}. Creates no client.
   *
   * @param config the brokers and settings both clients use
   * @throws IllegalArgumentException if {@code config} is null
   */
  public KafkaTransportModule(KafkaTransportConfig config) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    this.config = config;
  }

  @Override
  protected void configure() {
    bind(KafkaTransportConfig.class).toInstance(config);
    expose(KafkaPublisher.class);
    expose(KafkaSubscriber.class);
    expose(KafkaShareSubscriber.class);
  }

  @Provides
  @Singleton
  KafkaShareSubscriber shareSubscriber(KafkaTransportConfig config) {
    return KafkaShareSubscriber.create(config);
  }

  @Provides
  @Singleton
  KafkaPublisher publisher(KafkaTransportConfig config) {
    return KafkaPublisher.create(config);
  }

  @Provides
  @Singleton
  KafkaSubscriber subscriber(KafkaTransportConfig config) {
    return KafkaSubscriber.create(config);
  }
}

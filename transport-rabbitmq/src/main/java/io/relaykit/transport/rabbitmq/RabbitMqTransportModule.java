package io.relaykit.transport.rabbitmq;

import com.google.inject.AbstractModule;
import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.time.InstantSource;

/**
 * Guice wiring of the RabbitMQ transport: overrides relaykit's {@link Publisher} and {@link
 * Subscriber} with one {@link RabbitMqPublisher} and one {@link RabbitMqSubscriber} (singletons,
 * on the injector's {@link LifecycleListener} and {@link InstantSource}; the subscriber's
 * subscriptions report their handler durations and ignored parts to the injector's {@link
 * MetricsListener} unless their spec names one). The config stays private
 * to the module; only the two transport types are exposed. Connections open when the publisher or
 * subscriber is first injected; the application closes them.
 *
 * <pre>{@code
 * Injector injector = Guice.createInjector(
 *     new RelayKitModule(config),                      // or relaykit.transport=rabbitmq
 *     new RabbitMqTransportModule(RabbitMqTransportConfig.builder().build()));
 * }</pre>
 */
public final class RabbitMqTransportModule extends AbstractModule {

  private final RabbitMqTransportConfig config;

  /**
   * A module that binds relaykit's Publisher and Subscriber to RabbitMQ ones on {@code config}.
   *
   * @param config the broker and topology settings
   * @throws IllegalArgumentException if {@code config} is null
   */
  public RabbitMqTransportModule(RabbitMqTransportConfig config) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    this.config = config;
  }

  @Override
  protected void configure() {
    install(new Transport(config));
    RelayKitModule.override(binder(), Publisher.class).to(RabbitMqPublisher.class);
    RelayKitModule.override(binder(), Subscriber.class).to(RabbitMqSubscriber.class);
  }

  /** Builds the publisher and subscriber; exposes nothing else. */
  private static final class Transport extends PrivateModule {
    private final RabbitMqTransportConfig config;

    Transport(RabbitMqTransportConfig config) {
      this.config = config;
    }

    @Override
    protected void configure() {
      bind(RabbitMqTransportConfig.class).toInstance(config);
      expose(RabbitMqPublisher.class);
      expose(RabbitMqSubscriber.class);
    }

    @Provides
    @Singleton
    RabbitMqPublisher publisher(RabbitMqTransportConfig config, LifecycleListener listener,
        InstantSource clock) {
      return RabbitMqPublisher.create(config, listener, clock);
    }

    @Provides
    @Singleton
    RabbitMqSubscriber subscriber(RabbitMqTransportConfig config, LifecycleListener listener,
        MetricsListener metrics, InstantSource clock) {
      return RabbitMqSubscriber.create(config, listener, metrics, clock);
    }
  }

  @Override
  public String toString() {
    return "RabbitMqTransportModule[" + config + "]";
  }
}

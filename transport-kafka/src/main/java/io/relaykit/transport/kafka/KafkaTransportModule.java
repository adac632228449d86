package io.relaykit.transport.kafka;

import com.google.inject.Binding;
import com.google.inject.Injector;
import com.google.inject.Key;
import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.time.InstantSource;
import java.util.List;

/**
 * Guice wiring of the Kafka transport: binds one {@link KafkaPublisher}, one {@link
 * KafkaSubscriber} and one {@link KafkaShareSubscriber} on a {@link KafkaTransportConfig}, and
 * exposes only those three. They report to the injector's {@link LifecycleListener} and {@link
 * MetricsListener} (queue-guice's no-op defaults, or what the application binds with {@code
 * RelayKitModule.override}) as well as to the config's own {@link KafkaTransportConfig#listener()}
 * and {@link KafkaTransportConfig#metrics()}: each listener once, both when they differ. Installed
 * without queue-guice's {@code RelayKitModule} and with neither type bound, they report to the
 * config's alone. They take the injector's {@link InstantSource} too (failure times, retry due
 * times, ages) unless the config set a clock of its own. To make them the
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
    expose(KafkaPublisher.class);
    expose(KafkaSubscriber.class);
    expose(KafkaShareSubscriber.class);
  }

  /**
   * The module's config with the injector's listeners joined to its own: the config's alone when
   * the injector's is the same one, or the no-op.
   */
  @Provides
  @Singleton
  KafkaTransportConfig config(Injector injector) {
    return config.toBuilder()
        .listener(joined(config.listener(), bound(injector, LifecycleListener.class,
            config.listener())))
        .metrics(joined(config.metrics(), bound(injector, MetricsListener.class,
            config.metrics())))
        .clock(clock(config.clock(), bound(injector, InstantSource.class, config.clock())))
        .build();
  }

  /**
   * The config's clock when it set one; the injector's when the config kept the system clock
   * (queue-guice binds the system clock by default, so overriding {@link InstantSource} moves
   * the transport's time with the rest of the injector's).
   */
  static InstantSource clock(InstantSource own, InstantSource injected) {
    return own == InstantSource.system() ? injected : own;
  }

  /** The injector's {@code type}, or {@code otherwise} when it binds none. */
  private static <T> T bound(Injector injector, Class<T> type, T otherwise) {
    Binding<T> b = injector.getExistingBinding(Key.get(type));
    return b == null ? otherwise : b.getProvider().get();
  }

  static LifecycleListener joined(LifecycleListener own, LifecycleListener injected) {
    if (injected == own || injected == LifecycleListener.noop()) {
      return own;
    }
    return own == KafkaTransportConfig.NO_LISTENER ? injected
        : LifecycleListener.composite(List.of(own, injected));
  }

  static MetricsListener joined(MetricsListener own, MetricsListener injected) {
    if (injected == own || injected == MetricsListener.noop()) {
      return own;
    }
    return own == MetricsListener.noop() ? injected
        : MetricsListener.composite(List.of(own, injected));
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

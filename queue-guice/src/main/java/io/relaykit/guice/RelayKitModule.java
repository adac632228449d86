package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Binder;
import com.google.inject.Module;
import com.google.inject.binder.LinkedBindingBuilder;
import com.google.inject.multibindings.OptionalBinder;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.retry.RetryPolicy;
import java.time.InstantSource;
import java.util.Objects;

/**
 * Wires a relaykit deployment: binds the {@link RelayKitConfig}, gives every SPI an in-memory
 * default with {@link OptionalBinder#setDefault()}, and installs the storage and transport modules
 * the configuration names. A backend module replaces a default with {@link #override}; anything it
 * does not provide stays in memory, so {@code relaykit.storage=memory} (the default) runs with no
 * external service at all.
 *
 * <p>Defaults, each a singleton so every service shares one state: {@link InstantSource} the
 * system clock, {@link LifecycleListener} a no-op, {@link RetryPolicy} from the config's {@code
 * relaykit.retry.*} settings.
 *
 * <pre>{@code
 * Injector injector = Guice.createInjector(new RelayKitModule(RelayKitConfig.fromSystem()));
 * }</pre>
 */
public final class RelayKitModule extends AbstractModule {

  private final RelayKitConfig config;
  private final Module backends;

  /**
   * Uses the backends registered on the class path.
   *
   * @throws IllegalArgumentException if the config names an unknown backend (the message lists
   *     the known ones) or a backend's own settings are invalid
   */
  public RelayKitModule(RelayKitConfig config) {
    this(config, Backends.discover());
  }

  /**
   * Uses the given backends; resolves the names in {@code config} now, so a bad name fails here
   * rather than inside {@code Guice.createInjector}.
   *
   * @throws IllegalArgumentException if the config names an unknown backend (the message lists
   *     the known ones) or a backend's own settings are invalid
   */
  public RelayKitModule(RelayKitConfig config, Backends backends) {
    this.config = Objects.requireNonNull(config, "config");
    this.backends = Objects.requireNonNull(backends, "backends").select(config);
  }

  /**
   * Starts the binding that replaces relaykit's default for {@code spi}; call it from a backend
   * module (or an application's own module) as {@code RelayKitModule.override(binder(),
   * IdempotencyStore.class).to(...)}. At most one module may override a given SPI in one injector.
   */
  public static <T> LinkedBindingBuilder<T> override(Binder binder, Class<T> spi) {
    return OptionalBinder.newOptionalBinder(binder, spi).setBinding();
  }

  @Override
  protected void configure() {
    bind(RelayKitConfig.class).toInstance(config);

    defaultOf(InstantSource.class).toInstance(InstantSource.system());
    defaultOf(LifecycleListener.class).toInstance(LifecycleListener.noop());
    defaultOf(RetryPolicy.class).toInstance(config.retryPolicy());

    install(backends);
  }

  private <T> LinkedBindingBuilder<T> defaultOf(Class<T> spi) {
    return OptionalBinder.newOptionalBinder(binder(), spi).setDefault();
  }

  @Override
  public String toString() {
    return "RelayKitModule{storage=" + config.storage() + ", transport=" + config.transport() + "}";
  }
}

package io.relaykit.guice;

import com.google.inject.Key;
import com.google.inject.Module;
import io.relaykit.idempotency.IdempotencyStore;
import java.util.List;
import java.util.Optional;

/**
 * A backend a deployment can choose by name: {@code relaykit.storage=jdbc} picks the storage
 * provider named {@code jdbc} (or one of its {@linkplain #aliases() aliases}, such as {@code h2}). Adapters implement one per kind they serve and register it in {@code
 * META-INF/services/io.relaykit.guice.BackendModuleProvider}; {@link Backends#discover()} finds
 * them with {@link java.util.ServiceLoader}.
 *
 * <p>The module a provider returns overrides the SPIs its backend implements with {@link
 * RelayKitModule#override} and leaves every other SPI to its in-memory default. Implementations
 * need a public no-argument constructor and must be cheap to construct: discovery instantiates
 * every provider on the class path, chosen or not.
 */
public interface BackendModuleProvider {

  /** What a backend provides, and the key that chooses it. */
  enum Kind {
    /**
     * Journals, outbox, idempotency, version guard, dead letters; chosen by {@value
     * RelayKitConfig#STORAGE}.
     */
    STORAGE(RelayKitConfig.STORAGE),
    /** Publisher and subscriber; chosen by {@value RelayKitConfig#TRANSPORT}. */
    TRANSPORT(RelayKitConfig.TRANSPORT);

    private final String configKey;

    Kind(String configKey) {
      this.configKey = configKey;
    }

    /**
     * The configuration key whose value names the backend of this kind.
     *
     * @return {@code relaykit.storage} or {@code relaykit.transport}
     */
    public String configKey() {
      return configKey;
    }
  }

  /**
   * What this backend provides.
   *
   * @return storage or transport
   */
  Kind kind();

  /**
   * The name configuration uses: lower-case letters, digits, dashes: {@code jdbc}, {@code redis}.
   *
   * @return the backend's name
   */
  String name();

  /**
   * Other names that choose this backend, of the same form as {@link #name()}: {@code h2} and
   * {@code postgres} for {@code jdbc}. The module receives the configuration as given, so it can
   * check the name against its settings.
   *
   * @return the aliases; none by default
   */
  default List<String> aliases() {
    return List.of();
  }

  /**
   * The Guice module that binds this backend, configured from {@code config}: the provider reads
   * its own keys through {@code config.settings()} (e.g. {@code JdbcStorageConfig.from(settings)}),
   * and declares them in a {@link io.relaykit.config.ConfigKeys} provider so a misspelt key fails
   * when the settings are built.
   *
   * @param config the deployment's configuration
   * @return the module that binds this backend
   * @throws IllegalArgumentException naming the key and value when the backend's settings are
   *     missing or invalid
   */
  Module module(RelayKitConfig config);

  /**
   * For a {@link Kind#STORAGE} backend that can answer idempotency repeats in front of another
   * backend's store ({@code relaykit.idempotency.fast-tier=<this name>}): a module that binds this
   * backend's {@link IdempotencyStore} to {@code key}, and overrides none of relaykit's SPIs (it
   * may expose what the application must close, such as a client). {@link RelayKitModule} then
   * binds {@link IdempotencyStore} to a {@link io.relaykit.idempotency.TieredIdempotencyStore} of
   * this store in front of the storage backend's. Called only when the configuration asks for it,
   * and never for the backend {@code relaykit.storage} names.
   *
   * <p>The store must signal an outage with {@link
   * io.relaykit.idempotency.IdempotencyUnavailableException}, so the tiered store can fall back to
   * the durable tier, and should keep DONE keys no longer than the durable tier does.
   *
   * @param config the deployment's configuration
   * @param key the key the fast tier's store must be bound to
   * @return empty (the default) if this backend cannot serve as a fast tier
   * @throws IllegalArgumentException naming the key and value when the backend's settings are
   *     missing or invalid
   */
  default Optional<Module> idempotencyFastTier(RelayKitConfig config, Key<IdempotencyStore> key) {
    return Optional.empty();
  }
}

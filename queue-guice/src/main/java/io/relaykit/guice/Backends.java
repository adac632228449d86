package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The backends a deployment can choose from, by kind and name, Druid {@code PolyBind} style: a
 * configuration value picks a module, and an unknown value is an error that lists the known
 * names. {@value RelayKitConfig#MEMORY} is built in for both kinds (its module is empty: the
 * in-memory defaults of {@link RelayKitModule} stay in place).
 *
 * <p>Immutable. {@link #discover()} runs {@link ServiceLoader} once, instantiating every
 * registered provider; keep the result rather than discovering per lookup.
 */
public final class Backends {

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");

  private final Map<Kind, SortedMap<String, BackendModuleProvider>> byKind;

  private Backends(Map<Kind, SortedMap<String, BackendModuleProvider>> byKind) {
    this.byKind = byKind;
  }

  /**
   * The built-in memory backends plus every provider registered with the context class loader.
   *
   * @return the backends
   * @throws IllegalStateException if two providers claim the same kind and name, or one has an
   *     invalid name
   */
  public static Backends discover() {
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    return discover(loader != null ? loader : Backends.class.getClassLoader());
  }

  /**
   * The built-in memory backends plus every provider registered with {@code loader}.
   *
   * @param loader where to look for providers
   * @return the backends
   * @throws IllegalStateException if two providers claim the same kind and name, or one has an
   *     invalid name
   */
  public static Backends discover(ClassLoader loader) {
    Objects.requireNonNull(loader, "loader");
    List<BackendModuleProvider> found = new ArrayList<>();
    ServiceLoader.load(BackendModuleProvider.class, loader).forEach(found::add);
    return of(found);
  }

  /**
   * The built-in memory backends plus exactly {@code providers}, for tests and for applications
   * that wire providers by hand.
   *
   * @param providers the providers besides the memory ones
   * @return the backends
   * @throws IllegalStateException if two providers claim the same kind and name, or one has an
   *     invalid name
   */
  public static Backends of(Collection<? extends BackendModuleProvider> providers) {
    Map<Kind, SortedMap<String, BackendModuleProvider>> byKind = new EnumMap<>(Kind.class);
    for (Kind kind : Kind.values()) {
      byKind.put(kind, new TreeMap<>());
      byKind.get(kind).put(RelayKitConfig.MEMORY, new MemoryBackend(kind));
    }
    for (BackendModuleProvider p : providers) {
      Kind kind = p.kind();
      String name = p.name();
      if (kind == null || name == null || !NAME.matcher(name).matches()) {
        throw new IllegalStateException(p.getClass().getName() + " must have a kind and a name of"
            + " lower case letters, digits and dashes; has kind " + kind + ", name '" + name + "'");
      }
      List<String> names = new ArrayList<>();
      names.add(name);
      names.addAll(p.aliases() == null ? List.of() : p.aliases());
      for (String n : names) {
        if (n == null || !NAME.matcher(n).matches()) {
          throw new IllegalStateException(p.getClass().getName() + " has an alias that is not"
              + " lower case letters, digits and dashes: '" + n + "'");
        }
        BackendModuleProvider previous = byKind.get(kind).putIfAbsent(n, p);
        if (previous != null) {
          throw new IllegalStateException("two " + label(kind) + " backends are named '" + n
              + "': " + previous.getClass().getName() + " and " + p.getClass().getName());
        }
      }
    }
    Map<Kind, SortedMap<String, BackendModuleProvider>> frozen = new EnumMap<>(Kind.class);
    byKind.forEach((k, v) -> frozen.put(k, Collections.unmodifiableSortedMap(v)));
    return new Backends(frozen);
  }

  /**
   * The names known for {@code kind}, aliases included, sorted; always includes {@value
   * RelayKitConfig#MEMORY}.
   *
   * @param kind storage or transport
   * @return the names; unmodifiable
   */
  public SortedSet<String> names(Kind kind) {
    return Collections.unmodifiableSortedSet(new TreeSet<>(byKind.get(kind).keySet()));
  }

  /**
   * The provider of {@code kind} named {@code name}.
   *
   * @param kind storage or transport
   * @param name the backend's name
   * @return the provider
   * @throws IllegalArgumentException if there is none; the message lists the known names
   */
  public BackendModuleProvider provider(Kind kind, String name) {
    Objects.requireNonNull(kind, "kind");
    return provider(kind, name, kind.configKey());
  }

  private BackendModuleProvider provider(Kind kind, String name, String configKey) {
    BackendModuleProvider p = byKind.get(kind).get(name);
    if (p == null) {
      throw new IllegalArgumentException("unknown " + label(kind) + " backend '" + name + "' ("
          + configKey + "); known: " + String.join(", ", names(kind))
          + ". Add the adapter module that registers it to the class path.");
    }
    return p;
  }

  /**
   * The modules of the storage and transport backends {@code config} names, configured from
   * {@code config}, and of the idempotency fast tier when {@value
   * RelayKitConfig#IDEMPOTENCY_FAST_TIER} names one (it binds that backend's store to the key
   * {@link RelayKitModule} layers in front of the storage backend's).
   *
   * @param config the deployment's configuration
   * @return one module of all selected backends
   * @throws IllegalArgumentException for an unknown backend name (listing the known ones), a fast
   *     tier that is the storage backend itself or cannot serve as one, or invalid backend settings
   */
  public Module select(RelayKitConfig config) {
    Objects.requireNonNull(config, "config");
    Module storage = provider(Kind.STORAGE, config.storage()).module(config);
    Module transport = provider(Kind.TRANSPORT, config.transport()).module(config);
    Module fastTier = config.idempotencyFastTier().map(name -> fastTier(config, name))
        .orElse(binder -> { });
    return new AbstractModule() {
      @Override
      protected void configure() {
        install(storage);
        install(transport);
        install(fastTier);
      }
    };
  }

  private Module fastTier(RelayKitConfig config, String name) {
    String key = RelayKitConfig.IDEMPOTENCY_FAST_TIER;
    if (name.equals(config.storage()) || byKind.get(Kind.STORAGE).get(name) != null
        && byKind.get(Kind.STORAGE).get(name) == byKind.get(Kind.STORAGE).get(config.storage())) {
      throw new IllegalArgumentException(key + " names the storage backend itself ('" + name
          + "', " + RelayKitConfig.STORAGE + "): the fast tier must be another backend, such as"
          + " redis in front of h2");
    }
    return provider(Kind.STORAGE, name, key)
        .idempotencyFastTier(config, RelayKitModule.FAST_TIER_IDEMPOTENCY)
        .orElseThrow(() -> new IllegalArgumentException("storage backend '" + name + "' ("
            + key + ") cannot serve as an idempotency fast tier; set " + key + "="
            + RelayKitConfig.NONE + " or name one that can, such as redis"));
  }

  private static String label(Kind kind) {
    return kind.name().toLowerCase(java.util.Locale.ROOT);
  }

  @Override
  public String toString() {
    return "Backends{storage=" + names(Kind.STORAGE) + ", transport=" + names(Kind.TRANSPORT) + "}";
  }

  /** The built-in backend: binds nothing, so {@link RelayKitModule}'s defaults apply. */
  private static final class MemoryBackend implements BackendModuleProvider {
    private final Kind kind;

    MemoryBackend(Kind kind) {
      this.kind = kind;
    }

    @Override
    public Kind kind() {
      return kind;
    }

    @Override
    public String name() {
      return RelayKitConfig.MEMORY;
    }

    @Override
    public Module module(RelayKitConfig config) {
      return binder -> { };
    }
  }
}

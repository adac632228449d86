package io.relaykit.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Every setting the modules on the class path understand: queue-core's own ({@link CoreKeys})
 * plus each {@link ConfigKeys} provider's. {@link Settings} uses it to reject unknown keys with
 * the nearest known one suggested, to map {@code RELAYKIT_*} variables back to keys, to check
 * values against their types, and to know which values are secret.
 *
 * <p>Immutable and thread-safe. {@link #discover()} costs a {@link ServiceLoader} scan of the
 * class path; a lookup costs O(log n) in the number of keys, a suggestion O(n) edit distances.
 */
public final class ConfigRegistry {

  /**
   * relaykit's adapter namespaces and the artifacts that declare them, so a key of an adapter
   * that is not on the class path gets an error that says which artifact to add.
   */
  private static final Map<String, String> ADAPTERS = Map.of(
      "relaykit.jdbc", "relaykit-jdbc",
      "relaykit.h2", "relaykit-jdbc",
      "relaykit.redis", "relaykit-redis",
      "relaykit.kafka", "relaykit-kafka",
      "relaykit.rabbitmq", "relaykit-rabbitmq");

  /** Keys by name, families included (under their {@code .*} name). */
  private final Map<String, ConfigKey> keys;
  /** Key names by their environment variable; families are not in here. */
  private final Map<String, String> byVariable;
  /** Namespace to the module that owns it. */
  private final Map<String, String> owners;
  /** Deprecated key to the key replacing it. */
  private final Map<String, String> deprecated;
  /** Environment variable of a deprecated key to that key. */
  private final Map<String, String> deprecatedByVariable;

  private ConfigRegistry(Collection<? extends ConfigKeys> providers) {
    Map<String, ConfigKey> k = new TreeMap<>();
    Map<String, String> declaredBy = new TreeMap<>();
    Map<String, String> o = new TreeMap<>();
    List<ConfigKeys> all = new ArrayList<>();
    all.add(new CoreKeys());
    all.addAll(providers);
    for (ConfigKeys p : all) {
      String module = p.module();
      List<ConfigKey> declared = p.keys();
      if (module == null || p.namespaces() == null || declared == null) {
        throw new IllegalStateException("config key provider " + p.getClass().getName()
            + " returned null for its module, namespaces or keys");
      }
      for (String ns : p.namespaces()) {
        o.putIfAbsent(ns, module);
      }
      for (ConfigKey key : declared) {
        if (!p.namespaces().contains(ConfigKey.namespaceOf(key.name()))) {
          throw new IllegalStateException(module + " declares " + key.name() + " outside its"
              + " namespaces " + p.namespaces());
        }
        String other = declaredBy.put(key.name(), module);
        if (other != null && !other.equals(module)) {
          throw new IllegalStateException(key.name() + " is declared by both " + other + " and "
              + module + "; each key belongs to one module");
        }
        k.put(key.name(), key);
      }
    }
    Map<String, String> d = new TreeMap<>();
    for (ConfigKeys p : all) {
      Map<String, String> old = p.deprecatedKeys();
      if (old == null) {
        throw new IllegalStateException("config key provider " + p.getClass().getName()
            + " returned null for its deprecated keys");
      }
      old.forEach((from, to) -> {
        ConfigKey target = k.get(to);
        if (target == null || target.isFamily() || k.containsKey(from)
            || !p.namespaces().contains(ConfigKey.namespaceOf(from))) {
          throw new IllegalStateException(p.module() + " declares " + from + " as a deprecated"
              + " name of " + to + ": the new key must be declared, the old one not, and the"
              + " old one must lie under " + p.namespaces());
        }
        d.put(from, to);
      });
    }
    Map<String, String> dv = new TreeMap<>();
    d.keySet().forEach(from -> dv.put(Settings.environmentName(from), from));
    this.deprecated = Collections.unmodifiableMap(d);
    this.deprecatedByVariable = Collections.unmodifiableMap(dv);
    Map<String, String> v = new TreeMap<>();
    k.values().stream().filter(key -> !key.isFamily())
        .forEach(key -> v.put(Settings.environmentName(key.name()), key.name()));
    this.keys = Collections.unmodifiableMap(k);
    this.byVariable = Collections.unmodifiableMap(v);
    this.owners = Collections.unmodifiableMap(o);
  }

  /**
   * The keys of queue-core and of every {@link ConfigKeys} provider that the current thread's
   * context class loader or this class's own loader finds (both are searched, a provider found by
   * both counts once: a pool thread whose context loader cannot see the adapters still finds
   * them through the loader that loaded relaykit).
   *
   * @return the registry
   * @throws IllegalStateException if two modules declare the same key, a module declares a key
   *     outside its namespaces, or a provider cannot be loaded or answers null (naming it)
   */
  public static ConfigRegistry discover() {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    ClassLoader own = ConfigRegistry.class.getClassLoader();
    Map<String, ConfigKeys> byClass = new TreeMap<>();
    for (ClassLoader loader : new ClassLoader[] {context, own}) {
      if (loader != null) {
        load(loader).forEach(p -> byClass.putIfAbsent(p.getClass().getName(), p));
      }
    }
    return new ConfigRegistry(byClass.values());
  }

  /**
   * The keys of queue-core and of every {@link ConfigKeys} provider {@code loader} finds.
   *
   * @param loader where to look for providers
   * @return the registry
   * @throws IllegalStateException if two modules declare the same key, or a provider cannot be
   *     loaded or answers null (naming it)
   */
  public static ConfigRegistry discover(ClassLoader loader) {
    return new ConfigRegistry(load(loader));
  }

  private static List<ConfigKeys> load(ClassLoader loader) {
    List<ConfigKeys> found = new ArrayList<>();
    try {
      ServiceLoader.load(ConfigKeys.class, loader).forEach(found::add);
    } catch (ServiceConfigurationError e) {
      // A provider whose class is missing, not a ConfigKeys (a second copy of relaykit-core), or
      // whose constructor throws: the message names it.
      throw new IllegalStateException("cannot load relaykit's configuration keys: "
          + e.getMessage(), e);
    }
    return found;
  }

  /**
   * The keys of queue-core and of exactly {@code providers}, for tests and for applications that
   * assemble their modules themselves.
   *
   * @param providers the modules' key lists
   * @return the registry
   * @throws IllegalStateException if two modules declare the same key
   */
  public static ConfigRegistry of(ConfigKeys... providers) {
    return new ConfigRegistry(List.of(providers));
  }

  /**
   * The key that describes {@code key}: itself, or the longest family it falls under.
   *
   * @param key a full key
   * @return the declared key, or empty when no module declares it
   */
  public Optional<ConfigKey> find(String key) {
    ConfigKey exact = keys.get(key);
    if (exact != null) {
      return Optional.of(exact);
    }
    ConfigKey best = null;
    for (ConfigKey k : keys.values()) {
      if (k.isFamily() && k.matches(key)
          && (best == null || k.name().length() > best.name().length())) {
        best = k;
      }
    }
    return Optional.ofNullable(best);
  }

  /**
   * Every declared key, sorted by name.
   *
   * @return the keys, families included
   */
  public List<ConfigKey> keys() {
    return List.copyOf(keys.values());
  }
  /**
   * The former names of declared keys, still read for one release; see {@link
   * ConfigKeys#deprecatedKeys()}.
   *
   * @return deprecated key to the key that replaces it, sorted; unmodifiable
   */
  public Map<String, String> deprecatedKeys() {
    return deprecated;
  }

  /**
   * The key that replaces {@code key}, when {@code key} is a deprecated name.
   *
   * @param key a full key
   * @return the replacing key, or empty when {@code key} is not deprecated
   */
  public Optional<String> replacementOf(String key) {
    return Optional.ofNullable(deprecated.get(key));
  }

  /** The deprecated key whose environment variable is {@code variable}. */
  Optional<String> deprecatedKeyOf(String variable) {
    return Optional.ofNullable(deprecatedByVariable.get(variable));
  }


  /**
   * Whether some module on the class path owns {@code namespace}.
   *
   * @param namespace a prefix such as {@code relaykit.kafka}
   * @return true when a provider lists it in {@link ConfigKeys#namespaces()}
   */
  public boolean declares(String namespace) {
    return owners.containsKey(namespace);
  }

  /**
   * The key whose environment variable is {@code variable}: the key itself for a declared key
   * ({@code RELAYKIT_RETRY_MAX_ATTEMPTS} → {@code relaykit.retry.max-attempts}), else for a
   * variable under a family's prefix the family prefix plus the rest lower-cased with {@code _}
   * read as {@code .} ({@code RELAYKIT_KAFKA_PRODUCER_LINGER_MS} → {@code
   * relaykit.kafka.producer.linger.ms}).
   *
   * @param variable an environment variable name
   * @return the key, or empty when the variable names no declared setting
   */
  public Optional<String> keyOf(String variable) {
    String key = byVariable.get(variable);
    if (key != null) {
      return Optional.of(key);
    }
    String best = null;
    for (ConfigKey k : keys.values()) {
      if (!k.isFamily()) {
        continue;
      }
      String prefix = k.name().substring(0, k.name().length() - 2);
      String varPrefix = Settings.environmentName(prefix) + "_";
      if (variable.startsWith(varPrefix) && variable.length() > varPrefix.length()
          && (best == null || prefix.length() > best.length())) {
        best = prefix;
      }
    }
    if (best == null) {
      return Optional.empty();
    }
    String rest = variable.substring(Settings.environmentName(best).length() + 1);
    return Optional.of(best + "." + rest.toLowerCase(java.util.Locale.ROOT).replace('_', '.'));
  }

  /**
   * Why {@code key} is rejected, with the nearest declared key or the artifact that declares its
   * namespace: "relaykit.retry.max-attempt is not a relaykit setting; did you mean
   * relaykit.retry.max-attempts?".
   */
  String unknownKeyMessage(String key) {
    String head = key + " is not a relaykit setting";
    String ns = ConfigKey.namespaceOf(key);
    if (!declares(ns)) {
      String artifact = ADAPTERS.get(ns);
      if (artifact != null) {
        return head + ": no module on the class path declares " + ns + ".*; add " + artifact
            + " (it reads these keys) or remove the key";
      }
    }
    String nearest = null;
    int best = Integer.MAX_VALUE;
    for (ConfigKey k : keys.values()) {
      String candidate = k.isFamily() ? k.name().substring(0, k.name().length() - 1) + "<name>"
          : k.name();
      boolean sameNamespace = ConfigKey.namespaceOf(k.name()).equals(ns);
      int d = editDistance(key, candidate) - (sameNamespace ? 1 : 0);
      if (d < best) {
        best = d;
        nearest = candidate;
      }
    }
    if (nearest != null && (declares(ns) || best <= Math.max(3, key.length() / 4))) {
      return head + "; did you mean " + nearest + "?";
    }
    return head + "; the modules on the class path declare " + new TreeSet<>(owners.keySet())
        .stream().map(n -> n + ".*").toList();
  }

  /** Levenshtein distance: insertions, deletions and substitutions, one each. */
  static int editDistance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  /**
   * Lists the modules and how many keys each declares.
   *
   * @return a short description, for logs
   */
  @Override
  public String toString() {
    return "ConfigRegistry" + new TreeSet<>(owners.keySet()) + " (" + keys.size() + " keys)";
  }
}

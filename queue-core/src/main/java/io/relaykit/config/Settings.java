package io.relaykit.config;

import io.relaykit.internal.Secrets;
import io.relaykit.internal.Texts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * The merged, validated {@code relaykit.*} settings of one deployment: what every block and
 * adapter reads its configuration from, with or without Guice or Spring.
 *
 * <p>Values come from explicit sources ({@link Properties}, maps, {@link Builder#set}) and from
 * {@code RELAYKIT_*} environment variables; a later source overrides an earlier one, and {@link
 * #from(Properties, Map)} and {@link #fromSystem()} apply the environment last, so a variable
 * wins over a property and a default applies only when neither is set. A key and its variable are
 * one setting (relaxed names): upper-case the key and turn {@code .} and {@code -} into {@code _},
 * {@code relaykit.retry.max-attempts} ↔ {@code RELAYKIT_RETRY_MAX_ATTEMPTS}; an explicit key
 * spelled with dots where the declared key has dashes is read as the declared key.
 *
 * <p>A deprecated key ({@link ConfigKeys#deprecatedKeys()}, such as {@code relaykit.h2.url} for
 * {@code relaykit.jdbc.url}) is read as the key replacing it, with one {@link
 * System.Logger.Level#WARNING} line naming both (once per key and JVM, or each build to the
 * {@linkplain Builder#warnings sink} you give); when both are set, the new key wins.
 *
 * <p>Every key must be declared in the {@link ConfigRegistry} (queue-core's keys and each {@link
 * ConfigKeys} provider on the class path). An undeclared {@code relaykit.*} key from an explicit
 * source fails {@link Builder#build()} with the nearest declared key suggested; an undeclared
 * {@code RELAYKIT_*} variable (or JVM system property, {@link Builder#systemProperties}) is only
 * reported (one {@link System.Logger.Level#WARNING} line per build, or the {@linkplain
 * Builder#warnings sink} you give) and ignored, because those namespaces carry entries for other
 * purposes. Every value is checked against its key's type when built,
 * so a bad value fails at startup, never on the delivery path. Durations use {@link
 * DurationFormat}'s syntax everywhere.
 *
 * <p>Secrets (keys declared secret, keys containing {@code password}, {@code secret}, {@code
 * token} or {@code credential}, and pass-through client keys naming a credential, see {@link
 * #isSecret}) are shown as {@code ****} in {@link #toString()} and in every error message; so are
 * the user info of a {@code scheme://user:password@host} value and {@code password=}-style
 * parameters.
 *
 * <p>Immutable and thread-safe. A getter costs one map lookup and a parse of its value.
 */
public final class Settings {

  private static final String PREFIX = "relaykit.";
  private static final String ENV_PREFIX = "RELAYKIT_";
  private static final Pattern KEY = Pattern.compile("relaykit(\\.[a-z0-9][a-z0-9-]*)+");
  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");
  private static final System.Logger LOG = System.getLogger(Settings.class.getName());
  /**
   * The deprecated keys already reported to the logger in this JVM, so each is logged once;
   * bounded by the deprecated keys the registries declare.
   */
  private static final Set<String> DEPRECATIONS_LOGGED = ConcurrentHashMap.newKeySet();

  /**
   * Where a value came from: an explicit source (strict), a JVM system property (explicit, but a
   * shared namespace where tools keep their own {@code relaykit.*} knobs: lenient), or a variable.
   */
  private enum Source { EXPLICIT, SYSTEM, ENVIRONMENT }

  /** The most characters of a bad value an error message repeats (a 10 MB value, a short line). */
  static final int MAX_ECHOED_CHARS = 200;

  /** One setting: the key it is shown under, its raw value and where it came from. */
  private record Entry(String key, String value, Source source) {}

  /** Entries keyed by {@link #environmentName}, so a key and its variable are one entry. */
  private final Map<String, Entry> entries;
  /** The same values by key, sorted. */
  private final Map<String, String> values;
  private final ConfigRegistry registry;

  private Settings(Map<String, Entry> entries, ConfigRegistry registry) {
    this.entries = Map.copyOf(entries);
    Map<String, String> byKey = new TreeMap<>();
    entries.values().forEach(e -> byKey.put(e.key(), e.value()));
    this.values = Collections.unmodifiableMap(byKey);
    this.registry = registry;
  }

  /**
   * No values: every block at its defaults, checked against queue-core's keys only.
   *
   * @return empty settings
   */
  public static Settings empty() {
    return builder().registry(ConfigRegistry.of()).build();
  }

  /**
   * A builder that checks keys against {@link ConfigRegistry#discover()} unless given another
   * registry.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The {@code relaykit.*} entries of {@code properties}, then the {@code RELAYKIT_*} entries of
   * {@code environment} over them.
   *
   * @param properties explicit values; unknown {@code relaykit.*} keys are rejected
   * @param environment variables; unknown {@code RELAYKIT_*} ones are warned about and ignored
   * @return the settings
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static Settings from(Properties properties, Map<String, String> environment) {
    return builder().properties(properties).environment(environment).build();
  }

  /**
   * The JVM's system properties, and this process's environment over them. Both are shared
   * namespaces (build tools and test kits keep {@code relaykit.*} knobs there too), so an
   * undeclared key in either is warned about and ignored rather than rejected.
   *
   * @return the settings
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static Settings fromSystem() {
    return builder().systemProperties(System.getProperties()).environment(System.getenv())
        .build();
  }

  /**
   * The environment variable that sets {@code key}: {@code relaykit.a-b.c} → {@code
   * RELAYKIT_A_B_C}.
   *
   * @param key a key
   * @return its variable's name
   */
  public static String environmentName(String key) {
    return key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
  }

  /**
   * The registry these settings were checked against.
   *
   * @return the registry
   */
  public ConfigRegistry registry() {
    return registry;
  }

  /**
   * The raw value of {@code key}, environment already applied.
   *
   * @param key a full key
   * @return the value, or empty when unset
   * @throws NullPointerException if {@code key} is null
   */
  public Optional<String> get(String key) {
    return Optional.ofNullable(raw(key));
  }

  /**
   * Whether {@code key} has a value.
   *
   * @param key a full key
   * @return true when set by any source
   */
  public boolean isSet(String key) {
    return raw(key) != null;
  }

  /**
   * The value of {@code key}.
   *
   * @param key a full key
   * @return its value
   * @throws IllegalArgumentException naming the key and its environment variable when unset
   */
  public String require(String key) {
    String value = raw(key);
    if (value == null) {
      throw new IllegalArgumentException(key + " is required (property " + key
          + " or environment variable " + environmentName(key) + ")");
    }
    return value;
  }

  /**
   * {@code key} as text.
   *
   * @param key a full key
   * @param defaultValue returned when unset; may be null
   * @return the value or the default
   */
  public String getString(String key, String defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue : value;
  }

  /**
   * {@code key} as a backend name (a letter, then letters, digits and dashes), in lower case.
   *
   * @param key a full key
   * @param defaultValue returned when unset; may be null
   * @return the name or the default
   * @throws IllegalArgumentException naming the key and value when it is not such a name
   */
  public String getName(String key, String defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue : (String) parse(key, value, ConfigKey.Type.NAME, null);
  }

  /**
   * {@code key} as a whole number from 1 to {@code Integer.MAX_VALUE}.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is not such a number
   */
  public int getInt(String key, int defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue : (int) parse(key, value, ConfigKey.Type.INTEGER, null);
  }

  /**
   * {@code key} as a whole number from 1 to {@code Long.MAX_VALUE}.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is not such a number
   */
  public long getLong(String key, long defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue : (long) parse(key, value, ConfigKey.Type.LONG, null);
  }

  /**
   * {@code key} as {@code true} or {@code false}, in any case.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is neither
   */
  public boolean getBoolean(String key, boolean defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue
        : (boolean) parse(key, value, ConfigKey.Type.BOOLEAN, null);
  }

  /**
   * {@code key} as a positive duration in {@link DurationFormat}'s syntax.
   *
   * @param key a full key
   * @param defaultValue returned when unset; may be null
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is not a valid duration
   */
  public Duration getDuration(String key, Duration defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue
        : (Duration) parse(key, value, ConfigKey.Type.DURATION, null);
  }

  /**
   * {@code key} as a comma-separated list of durations ({@code 1s,10s,1m}).
   *
   * @param key a full key
   * @param defaultValue returned when unset; may be null
   * @return the durations in order, or the default
   * @throws IllegalArgumentException naming the key and value when an element is not a valid
   *     duration or the list is empty
   */
  @SuppressWarnings("unchecked")
  public List<Duration> getDurations(String key, List<Duration> defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue
        : (List<Duration>) parse(key, value, ConfigKey.Type.DURATION_LIST, null);
  }

  /**
   * {@code key} as one of the constants of {@code type}, written in lower case with dashes:
   * {@code key-per-destination} is {@code KEY_PER_DESTINATION}; any case is accepted.
   *
   * @param <E> the enum type
   * @param key a full key
   * @param type the enum class
   * @param defaultValue returned when unset; may be null
   * @return the constant or the default
   * @throws IllegalArgumentException naming the key, the value and the accepted values when the
   *     value names no constant
   */
  public <E extends Enum<E>> E getEnum(String key, Class<E> type, E defaultValue) {
    String value = raw(key);
    if (value == null) {
      return defaultValue;
    }
    String wanted = value.strip().replace('-', '_');
    for (E e : type.getEnumConstants()) {
      if (e.name().equalsIgnoreCase(wanted)) {
        return e;
      }
    }
    List<String> names = new ArrayList<>();
    for (E e : type.getEnumConstants()) {
      names.add(e.name().toLowerCase(Locale.ROOT).replace('_', '-'));
    }
    throw invalid(key, value, "one of " + String.join(", ", names));
  }

  /**
   * The entries under {@code prefix}, with the prefix and its dot removed: {@code
   * section("relaykit.jdbc")} maps {@code relaykit.jdbc.url} to {@code url}.
   *
   * @param prefix a key prefix, with or without the trailing dot
   * @return the entries, sorted; unmodifiable
   */
  public Map<String, String> section(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    String p = prefix.endsWith(".") ? prefix : prefix + ".";
    Map<String, String> out = new TreeMap<>();
    values.forEach((k, v) -> {
      if (k.startsWith(p) && k.length() > p.length()) {
        out.put(k.substring(p.length()), v);
      }
    });
    return Collections.unmodifiableMap(out);
  }

  /**
   * Every entry, sorted by key. Holds secrets in clear: do not log it, log {@link #toString()}.
   *
   * @return the entries; unmodifiable
   */
  public Map<String, String> asMap() {
    return values;
  }

  /**
   * A copy with {@code key} set (or unset, for a null value), checked like the original.
   *
   * @param key a declared key
   * @param value the value, or null to unset
   * @return new settings
   * @throws IllegalArgumentException as {@link Builder#build()} does
   */
  public Settings with(String key, String value) {
    Builder b = builder().registry(registry);
    b.entries.putAll(entries);
    return b.set(key, value).build();
  }

  /**
   * Whether {@code key}'s value is a secret: the registry says so, the key contains {@code
   * password}, {@code secret}, {@code token} or {@code credential}, or it is a pass-through client
   * key ({@code relaykit.kafka.producer.*}, {@code .consumer.*}, {@code .admin.*}) whose name
   * contains {@code jaas}, {@code password}, {@code key}, {@code secret}, {@code token}, {@code
   * credential}, {@code auth} or {@code user.info}.
   *
   * @param key a full key
   * @return true when its value is masked
   */
  public boolean isSecret(String key) {
    return Secrets.isSecretKey(key)
        || registry.find(key).map(ConfigKey::secret).orElse(false);
  }

  /**
   * How {@code key}'s value may be shown: {@code ****} for a secret, else the value with the user
   * info of any {@code scheme://user:password@host} (everything up to the last {@code @}) and any
   * {@code password=}, {@code pwd=}, {@code secret=} or {@code token=} parameter replaced by
   * {@code ****}.
   *
   * @param key the key the value belongs to
   * @param value the value; may be null
   * @return the value fit for a log line or an error message
   */
  public String masked(String key, String value) {
    if (value == null) {
      return "null";
    }
    return isSecret(key) ? Secrets.MASK : Secrets.mask(value);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Settings s && s.entries.equals(entries);
  }

  @Override
  public int hashCode() {
    return entries.hashCode();
  }

  /** Lists every entry, secrets masked. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("Settings{");
    String sep = "";
    for (Map.Entry<String, String> e : values.entrySet()) {
      sb.append(sep).append(e.getKey()).append('=').append(masked(e.getKey(), e.getValue()));
      sep = ", ";
    }
    return sb.append('}').toString();
  }

  private String raw(String key) {
    Objects.requireNonNull(key, "key");
    Entry e = entries.get(environmentName(key));
    return e == null ? null : e.value();
  }

  /** Parses {@code value} as {@code type}, or throws naming the key (and the variable). */
  private Object parse(String key, String value, ConfigKey.Type type, List<String> choices) {
    String v = value.strip();
    switch (type) {
      case INTEGER, LONG -> {
        long max = type == ConfigKey.Type.INTEGER ? Integer.MAX_VALUE : Long.MAX_VALUE;
        try {
          long n = Long.parseLong(v);
          if (n >= 1 && n <= max) {
            return type == ConfigKey.Type.INTEGER ? (Object) (int) n : (Object) n;
          }
        } catch (NumberFormatException e) {
          // reported below
        }
        throw invalid(key, value, "a whole number from 1 to " + max);
      }
      case BOOLEAN -> {
        if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) {
          return Boolean.parseBoolean(v);
        }
        throw invalid(key, value, "true or false");
      }
      case DURATION -> {
        return duration(key, value, v);
      }
      case DURATION_LIST -> {
        List<Duration> out = new ArrayList<>();
        for (String part : v.split(",", -1)) {
          out.add(duration(key, value, part));
        }
        return List.copyOf(out);
      }
      case CHOICE -> {
        String lower = v.toLowerCase(Locale.ROOT);
        if (choices.contains(lower)) {
          return lower;
        }
        throw invalid(key, value, "one of " + String.join(", ", choices));
      }
      case NAME -> {
        String lower = v.toLowerCase(Locale.ROOT);
        if (NAME.matcher(lower).matches()) {
          return lower;
        }
        throw invalid(key, value, "a backend name such as memory, jdbc, redis, kafka");
      }
      default -> {
        return value;
      }
    }
  }

  private Duration duration(String key, String whole, String part) {
    try {
      return DurationFormat.parse(key, part);
    } catch (IllegalArgumentException e) {
      throw invalid(key, whole, DurationFormat.EXPECTED
          + (whole.equals(part) ? "" : " (or a comma-separated list of them)"));
    }
  }

  private IllegalArgumentException invalid(String key, String value, String expected) {
    Entry e = entries.get(environmentName(key));
    String from = e != null && e.source() == Source.ENVIRONMENT
        ? " (from environment variable " + environmentName(key) + ")" : "";
    return new IllegalArgumentException(
        key + " must be " + expected + ", was '"
            + Texts.truncateChars(masked(key, value), MAX_ECHOED_CHARS) + "'" + from);
  }

  /**
   * Collects values, then {@link #build()} checks all of them. A later call overrides an earlier
   * one for the same setting. Not thread-safe.
   */
  public static final class Builder {
    private final Map<String, Entry> entries = new TreeMap<>();
    private ConfigRegistry registry;
    private Consumer<String> warnings;
    /** System property names under relaykit. that are not keys; bounded by the properties given. */
    private final List<String> malformedProperties = new ArrayList<>();

    private Builder() {}

    /**
     * Checks keys against {@code registry} instead of {@link ConfigRegistry#discover()}.
     *
     * @param registry the declared keys
     * @return this builder
     * @throws NullPointerException if {@code registry} is null
     */
    public Builder registry(ConfigRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /**
     * Where warnings about ignored environment variables and system properties go instead of the {@link System.Logger}
     * {@code io.relaykit.config.Settings} at {@code WARNING}.
     *
     * @param sink receives one line per build that ignored variables
     * @return this builder
     * @throws NullPointerException if {@code sink} is null
     */
    public Builder warnings(Consumer<String> sink) {
      this.warnings = Objects.requireNonNull(sink, "sink");
      return this;
    }

    /**
     * Takes every {@code relaykit.*} entry of {@code properties} (its defaults included).
     *
     * @param properties explicit values
     * @return this builder
     * @throws IllegalArgumentException if a key is not a well-formed {@code relaykit.} key, or two
     *     keys differ only in {@code .} versus {@code -} (both would be one variable)
     */
    public Builder properties(Properties properties) {
      Objects.requireNonNull(properties, "properties");
      Map<String, String> map = new TreeMap<>();
      for (String name : properties.stringPropertyNames()) {
        map.put(name, properties.getProperty(name));
      }
      return values(map);
    }

    /**
     * Takes every {@code relaykit.*} entry of {@code properties} as JVM system properties: like
     * {@link #properties}, except that an undeclared key is warned about and ignored, as for the
     * environment, because other tools keep {@code relaykit.*} knobs among system properties.
     *
     * A name that is not even a well-formed key ({@code relaykit.kit.dockerHost}, {@code
     * relaykit.bench_dir}) is warned about and ignored too: a tool's knob never fails startup.
     *
     * @param properties such as {@code System.getProperties()}
     * @return this builder
     */
    public Builder systemProperties(Properties properties) {
      Objects.requireNonNull(properties, "properties");
      for (String name : new TreeSet<>(properties.stringPropertyNames())) {
        if (name.startsWith(PREFIX)) {
          if (!KEY.matcher(name).matches()) {
            malformedProperties.add(name);
            continue;
          }
          set(name, properties.getProperty(name));
          entries.computeIfPresent(environmentName(name),
              (k, e) -> new Entry(e.key(), e.value(), Source.SYSTEM));
        }
      }
      return this;
    }

    /**
     * Takes every {@code relaykit.*} entry of {@code values}; other keys are ignored.
     *
     * @param values explicit values, e.g. a parsed properties file or a framework's property map
     * @return this builder
     * @throws IllegalArgumentException if a key is not a well-formed {@code relaykit.} key, or two
     *     keys differ only in {@code .} versus {@code -} (both would be one variable)
     */
    public Builder values(Map<String, String> values) {
      Objects.requireNonNull(values, "values");
      Map<String, String> seen = new TreeMap<>();
      for (String name : new TreeSet<>(values.keySet())) {
        if (name.startsWith(PREFIX)) {
          String other = seen.put(environmentName(name), name);
          if (other != null) {
            throw new IllegalArgumentException("keys " + other + " and " + name
                + " name the same setting (" + environmentName(name) + "); keep one");
          }
          set(name, values.get(name));
        }
      }
      return this;
    }

    /**
     * Takes every {@code RELAYKIT_*} variable of {@code environment}; it overrides the value
     * already set for its key. A variable that names no declared setting is reported by {@link
     * #build()} and ignored.
     *
     * @param environment variables, such as {@code System.getenv()}
     * @return this builder
     */
    public Builder environment(Map<String, String> environment) {
      Objects.requireNonNull(environment, "environment");
      new TreeMap<>(environment).forEach((name, value) -> {
        if (name != null && name.startsWith(ENV_PREFIX) && value != null) {
          entries.put(name, new Entry(null, value, Source.ENVIRONMENT));
        }
      });
      return this;
    }

    /**
     * Sets {@code key} to {@code value}; a null value unsets it.
     *
     * @param key a {@code relaykit.} key
     * @param value its value, or null
     * @return this builder
     * @throws IllegalArgumentException if {@code key} is not a {@code relaykit.} key made of lower
     *     case letters, digits, dots and dashes
     */
    public Builder set(String key, String value) {
      if (key == null || !KEY.matcher(key).matches()) {
        throw new IllegalArgumentException("key must look like relaykit.section.name (lower case,"
            + " digits, dots, dashes), was '" + key + "'");
      }
      if (value == null) {
        entries.remove(environmentName(key));
      } else {
        entries.put(environmentName(key), new Entry(key, value, Source.EXPLICIT));
      }
      return this;
    }

    /**
     * Resolves every entry against the registry and checks its value.
     *
     * @return the settings
     * @throws IllegalArgumentException naming the key and (masked) value of the first invalid
     *     entry, or an explicit key no module declares, with the nearest declared key suggested
     * @throws IllegalStateException if discovery finds two modules declaring one key
     */
    public Settings build() {
      ConfigRegistry reg = registry != null ? registry : ConfigRegistry.discover();
      Map<String, Entry> resolved = new TreeMap<>();
      List<String> ignored = new ArrayList<>();
      List<String> ignoredProperties = new ArrayList<>(malformedProperties);
      for (Map.Entry<String, Entry> e : entries.entrySet()) {
        Entry entry = e.getValue();
        Optional<String> deprecatedKey = entry.source() == Source.ENVIRONMENT
            ? reg.deprecatedKeyOf(e.getKey()) : Optional.of(entry.key())
                .filter(k -> reg.replacementOf(k).isPresent());
        if (deprecatedKey.isPresent()) {
          String old = deprecatedKey.get();
          String replacement = reg.replacementOf(old).orElseThrow();
          String variable = environmentName(replacement);
          String shown = entry.source() == Source.ENVIRONMENT ? e.getKey() : old;
          String shownNew = entry.source() == Source.ENVIRONMENT ? variable : replacement;
          if (entries.containsKey(variable)) {
            deprecation(old, shown + " is deprecated and ignored: " + shownNew + " is set");
          } else {
            deprecation(old, shown + " is deprecated and read for one more release; use "
                + shownNew);
            resolved.put(variable, new Entry(replacement, entry.value(), entry.source()));
          }
          continue;
        }
        if (entry.source() == Source.ENVIRONMENT) {
          Optional<String> key = reg.keyOf(e.getKey());
          if (key.isEmpty()) {
            ignored.add(e.getKey());
            continue;
          }
          resolved.put(e.getKey(), new Entry(key.get(), entry.value(), Source.ENVIRONMENT));
          continue;
        }
        Optional<ConfigKey> declared = reg.find(entry.key());
        if (declared.isEmpty()) {
          Optional<String> relaxed = reg.keyOf(e.getKey());
          if (relaxed.isEmpty() && entry.source() == Source.SYSTEM) {
            ignoredProperties.add(entry.key());
            continue;
          }
          if (relaxed.isEmpty()) {
            throw new IllegalArgumentException(reg.unknownKeyMessage(entry.key()));
          }
          // relaykit.retry.max.attempts is relaykit.retry.max-attempts
          entry = new Entry(relaxed.get(), entry.value(), entry.source());
        }
        resolved.put(e.getKey(), entry);
      }
      Settings settings = new Settings(resolved, reg);
      for (Entry entry : resolved.values()) {
        ConfigKey declared = reg.find(entry.key()).orElseThrow();
        settings.parse(entry.key(), entry.value(), declared.type(), declared.choices());
      }
      if (!ignored.isEmpty()) {
        warn("ignoring environment variables that name no relaykit setting on the class path: "
            + ignored);
      }
      if (!ignoredProperties.isEmpty()) {
        warn("ignoring system properties that name no relaykit setting on the class path: "
            + ignoredProperties);
      }
      return settings;
    }

    /**
     * One line for a deprecated key: to the sink when one is given (each build), else to the
     * logger once per key and JVM.
     */
    private void deprecation(String oldKey, String line) {
      if (warnings != null) {
        warnings.accept(line);
      } else if (DEPRECATIONS_LOGGED.add(oldKey)) {
        LOG.log(System.Logger.Level.WARNING, line);
      }
    }

    private void warn(String line) {
      if (warnings != null) {
        warnings.accept(line);
      } else {
        LOG.log(System.Logger.Level.WARNING, line);
      }
    }
  }
}

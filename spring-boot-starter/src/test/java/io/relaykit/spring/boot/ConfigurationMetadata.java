package io.relaykit.spring.boot;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.CoreKeys;
import io.relaykit.config.DurationFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Renders Spring Boot's configuration metadata ({@code META-INF/spring-configuration-metadata.json},
 * what IDEs read to complete and check keys in application.properties and YAML) from core's key
 * registry: every key that a {@link ConfigKeys} provider on the class path declares, with its
 * type, default and description, one group per namespace, and value hints for choices and for the
 * storage and transport names the starter wires.
 *
 * <p>The output is a pure function of the registry (sorted, no timestamps), so the committed file
 * can be compared with it as text. Test code: the starter ships the rendered file, not this class.
 */
final class ConfigurationMetadata {

  /** Where the committed file lives, from the module's directory. */
  static final Path FILE = Path.of("src", "main", "resources", "META-INF",
      "spring-configuration-metadata.json");

  /**
   * The system property that makes {@link ConfigurationMetadataTest} rewrite the file; not under
   * {@code relaykit.}, so it is never taken for a setting.
   */
  static final String REGENERATE_PROPERTY = "regenerateConfigMetadata";

  /** How to regenerate the file after a key changed. */
  static final String REGENERATE = "rt spring-boot-starter ConfigurationMetadataTest -D"
      + REGENERATE_PROPERTY + "=true -Dmaven.javadoc.skip -Dmaven.source.skip -Dinvoker.skip"
      + " (or: mvn -o -pl spring-boot-starter -am verify -Dtest=ConfigurationMetadataTest"
      + " -Dsurefire.failIfNoSpecifiedTests=false -D" + REGENERATE_PROPERTY + "=true), then"
      + " commit " + FILE;

  /**
   * Keys the registry declares that the starter does not read: the application's DataSource
   * ({@code spring.datasource.*}) replaces relaykit-jdbc's own connection pool.
   */
  static final Map<String, String> NOT_READ_BY_STARTER = Map.of(
      "relaykit.jdbc.url", "spring.datasource.url",
      "relaykit.jdbc.username", "spring.datasource.username",
      "relaykit.jdbc.password", "spring.datasource.password",
      "relaykit.jdbc.pool-size", "spring.datasource.hikari.maximum-pool-size");

  /** Keys the starter fills from Spring Boot's own connection settings when they are unset. */
  static final Map<String, String> SPRING_FALLBACKS = Map.of(
      RelaykitEnvironment.KAFKA_BOOTSTRAP, "spring.kafka.bootstrap-servers",
      RelaykitEnvironment.RABBITMQ_URI, "spring.rabbitmq.addresses, or spring.rabbitmq.host,"
          + " port, username, password, virtual-host and ssl.enabled",
      RelaykitEnvironment.REDIS_URI, "spring.data.redis.url, or spring.data.redis.host, port,"
          + " username, password, database and ssl.enabled");

  /** Keys only relaykit-guice's module reads; the starter wires no Redis journal or dead letters. */
  static final java.util.Set<String> GUICE_ONLY = java.util.Set.of(
      "relaykit.redis.journal", "relaykit.redis.dead-letters");

  private static final Map<String, String> STORAGE_HINTS = Map.of(
      "memory", "In-memory outbox, dead letters and idempotency keys; nothing survives a restart.",
      "jdbc", "relaykit-jdbc on the application's DataSource (H2, PostgreSQL).",
      "h2", "Alias of jdbc. With a PostgreSQL DataSource it is deprecated: use postgres or jdbc.",
      "postgres", "Alias of jdbc that also requires a PostgreSQL DataSource.");
  private static final Map<String, String> FAST_TIER_HINTS = Map.of(
      "none", "No fast tier: the storage's idempotency store alone.",
      "redis", "relaykit-redis in front of the database's store (relaykit.storage=jdbc), which stays"
          + " the final guard; spring.data.redis.* is reused.");
  private static final Map<String, String> TRANSPORT_HINTS = Map.of(
      "memory", "One in-process transport; messages do not leave the JVM.",
      "kafka", "relaykit-kafka (spring.kafka.bootstrap-servers is reused).",
      "rabbitmq", "relaykit-rabbitmq (spring.rabbitmq.* is reused).");

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");

  private ConfigurationMetadata() {}

  /**
   * The providers on this class path, queue-core's first, sorted by module after it.
   *
   * @return the providers
   */
  static List<ConfigKeys> providers() {
    Map<String, ConfigKeys> byModule = new TreeMap<>();
    ServiceLoader.load(ConfigKeys.class, ConfigurationMetadata.class.getClassLoader())
        .forEach(p -> byModule.put(p.module(), p));
    List<ConfigKeys> all = new ArrayList<>();
    all.add(new CoreKeys());
    all.addAll(byModule.values());
    return all;
  }

  /**
   * The metadata of every key in {@code registry}.
   *
   * @param registry the keys
   * @param providers the modules that declared them, for the groups
   * @return the JSON text, ending in a newline
   */
  static String render(ConfigRegistry registry, List<ConfigKeys> providers) {
    Map<String, String> groups = new TreeMap<>();
    for (ConfigKeys p : providers) {
      for (String ns : p.namespaces()) {
        if (registry.find(ns).filter(k -> !k.isFamily()).isPresent()) {
          continue; // a namespace that is one key (relaykit.storage) is no group
        }
        if (registry.keys().stream().noneMatch(k -> k.name().startsWith(ns + "."))) {
          continue; // a former namespace (relaykit.h2) holds only deprecated names
        }
        groups.putIfAbsent(ns, "Settings read by " + p.module() + ".");
      }
    }
    StringBuilder out = new StringBuilder("{\n  \"groups\": [");
    String sep = "\n";
    for (Map.Entry<String, String> g : groups.entrySet()) {
      out.append(sep).append("    {\n");
      field(out, "name", g.getKey(), true);
      field(out, "description", g.getValue(), false);
      out.append("    }");
      sep = ",\n";
    }
    out.append("\n  ],\n  \"properties\": [");
    sep = "\n";
    List<ConfigKey> choices = new ArrayList<>();
    Map<String, Object> byName = new TreeMap<>();
    registry.keys().forEach(k -> byName.put(k.name(), k));
    byName.putAll(registry.deprecatedKeys());
    for (Map.Entry<String, Object> named : byName.entrySet()) {
      if (named.getValue() instanceof String replacement) {
        ConfigKey k = registry.find(replacement).orElseThrow();
        out.append(sep).append("    {\n");
        field(out, "name", named.getKey(), true);
        field(out, "type", javaType(k), true);
        field(out, "description", "Deprecated: read as " + replacement + " for one more"
            + " release.", true);
        out.append("      \"deprecation\": {\n");
        out.append("        \"level\": \"warning\",\n");
        out.append("        \"reason\": ").append(quote("Renamed to " + replacement
            + "; the old name is read for one more release and logs one line.")).append(",\n");
        out.append("        \"replacement\": ").append(quote(replacement)).append('\n');
        out.append("      }\n");
        out.append("    }");
        sep = ",\n";
        continue;
      }
      ConfigKey k = (ConfigKey) named.getValue();
      if (k.type() == ConfigKey.Type.CHOICE) {
        choices.add(k);
      }
      out.append(sep).append("    {\n");
      String name = k.isFamily() ? k.name().substring(0, k.name().length() - 2) : k.name();
      field(out, "name", name, true);
      field(out, "type", javaType(k), true);
      String defaultJson = defaultJson(k);
      field(out, "description", description(k, registry, defaultJson == null), defaultJson != null);
      if (defaultJson != null) {
        out.append("      \"defaultValue\": ").append(defaultJson).append('\n');
      }
      out.append("    }");
      sep = ",\n";
    }
    out.append("\n  ],\n  \"hints\": [");
    Map<String, Map<String, String>> hints = new TreeMap<>();
    for (ConfigKey k : choices) {
      Map<String, String> values = new java.util.LinkedHashMap<>();
      k.choices().forEach(c -> values.put(c, null));
      hints.put(k.name(), values);
    }
    hints.put("relaykit.storage", ordered(RelaykitEnvironment.STORAGES, STORAGE_HINTS));
    hints.put("relaykit.transport", ordered(RelaykitEnvironment.TRANSPORTS, TRANSPORT_HINTS));
    hints.put(CoreKeys.IDEMPOTENCY_FAST_TIER,
        ordered(RelaykitEnvironment.FAST_TIERS, FAST_TIER_HINTS));
    sep = "\n";
    for (Map.Entry<String, Map<String, String>> h : hints.entrySet()) {
      out.append(sep).append("    {\n");
      field(out, "name", h.getKey(), true);
      out.append("      \"values\": [");
      String vsep = "\n";
      for (Map.Entry<String, String> v : h.getValue().entrySet()) {
        out.append(vsep).append("        {\n");
        out.append("          \"value\": ").append(quote(v.getKey()));
        if (v.getValue() != null) {
          out.append(",\n          \"description\": ").append(quote(v.getValue()));
        }
        out.append("\n        }");
        vsep = ",\n";
      }
      out.append("\n      ]\n    }");
      sep = ",\n";
    }
    out.append("\n  ]\n}\n");
    return out.toString();
  }

  /**
   * Writes the rendered metadata of this class path's registry to {@code file}.
   *
   * @param file where to write
   * @throws IOException if it cannot be written
   */
  static void write(Path file) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, render(ConfigRegistry.discover(), providers()),
        StandardCharsets.UTF_8);
  }

  private static Map<String, String> ordered(List<String> names, Map<String, String> text) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    names.forEach(n -> m.put(n, text.get(n)));
    return m;
  }

  private static String javaType(ConfigKey k) {
    if (k.isFamily()) {
      return "java.util.Map<java.lang.String,java.lang.String>";
    }
    return switch (k.type()) {
      case STRING, CHOICE, NAME -> "java.lang.String";
      case INTEGER -> "java.lang.Integer";
      case LONG -> "java.lang.Long";
      case BOOLEAN -> "java.lang.Boolean";
      case DURATION -> "java.time.Duration";
      case DURATION_LIST -> "java.util.List<java.time.Duration>";
    };
  }

  /** The default as JSON, or null when there is none or it is a sentence rather than a value. */
  static String defaultJson(ConfigKey k) {
    String d = k.defaultValue();
    if (d == null || k.isFamily()) {
      return null;
    }
    try {
      return switch (k.type()) {
        case INTEGER -> Integer.toString(Integer.parseInt(d.strip()));
        case LONG -> Long.toString(Long.parseLong(d.strip()));
        case BOOLEAN -> d.strip().equalsIgnoreCase("true") ? "true"
            : d.strip().equalsIgnoreCase("false") ? "false" : null;
        case DURATION -> {
          DurationFormat.parse(k.name(), d);
          yield quote(d.strip());
        }
        case DURATION_LIST -> {
          List<String> items = new ArrayList<>();
          for (String item : d.split(",")) {
            DurationFormat.parse(k.name(), item);
            items.add(quote(item.strip()));
          }
          yield "[" + String.join(", ", items) + "]";
        }
        case CHOICE -> k.choices().contains(d.strip().toLowerCase(Locale.ROOT))
            ? quote(d.strip().toLowerCase(Locale.ROOT)) : null;
        case NAME -> NAME.matcher(d.strip()).matches() ? quote(d.strip()) : null;
        case STRING -> d.chars().anyMatch(Character::isWhitespace) ? null : quote(d);
      };
    } catch (IllegalArgumentException notAValue) {
      return null;
    }
  }

  private static String description(ConfigKey k, ConfigRegistry registry, boolean sayDefault) {
    String d = k.description().strip();
    StringBuilder s = new StringBuilder();
    s.append(Character.toUpperCase(d.charAt(0))).append(d.substring(1));
    if (!d.endsWith(".")) {
      s.append('.');
    }
    if (sayDefault && k.defaultValue() != null && !k.isFamily()) {
      String v = k.defaultValue().strip();
      s.append(registry.find(v).isPresent() ? " Default: the value of " + v + "."
          : " Default: " + v + ".");
    }
    if (k.type() == ConfigKey.Type.DURATION || k.type() == ConfigKey.Type.DURATION_LIST) {
      s.append(" A duration such as 500ms, 30s, 5m, 1h, 2d or PT30S.");
    }
    if (k.isFamily()) {
      s.append(" Any key below ").append(k.name(), 0, k.name().length() - 1)
          .append(" is passed through.");
    }
    if (k.secret()) {
      s.append(" Secret: relaykit masks it as **** wherever it shows settings.");
    }
    String fallback = SPRING_FALLBACKS.get(k.name());
    if (fallback != null) {
      s.append(" Unset, the Spring Boot starter uses ").append(fallback).append('.');
    }
    String springKey = NOT_READ_BY_STARTER.get(k.name());
    if (springKey != null) {
      s.append(" Not read by the Spring Boot starter, which uses the application's DataSource ("
          + springKey + ").");
    }
    if (GUICE_ONLY.contains(k.name())) {
      s.append(" Not read by the Spring Boot starter (relaykit-guice's RedisStorageModule).");
    }
    return s.toString();
  }

  private static void field(StringBuilder out, String name, String value, boolean more) {
    out.append("      ").append(quote(name)).append(": ").append(quote(value))
        .append(more ? ",\n" : "\n");
  }

  static String quote(String s) {
    StringBuilder q = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> q.append("\\\"");
        case '\\' -> q.append("\\\\");
        case '\n' -> q.append("\\n");
        case '\t' -> q.append("\\t");
        default -> {
          if (c < 0x20) {
            q.append(String.format("\\u%04x", (int) c));
          } else {
            q.append(c);
          }
        }
      }
    }
    return q.append('"').toString();
  }
}

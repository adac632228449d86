package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import io.relaykit.config.ConfigRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.configurationmetadata.ConfigurationMetadataProperty;
import org.springframework.boot.configurationmetadata.ConfigurationMetadataRepository;
import org.springframework.boot.configurationmetadata.ConfigurationMetadataRepositoryJsonBuilder;
import org.springframework.boot.configurationmetadata.ValueHint;

/**
 * The committed {@code META-INF/spring-configuration-metadata.json} is core's key registry as it
 * is on the starter's class path (relaykit-core, relaykit-jdbc, relaykit-kafka, relaykit-rabbitmq,
 * relaykit-redis and the starter's own {@code relaykit.spring.*}), and Spring Boot's own metadata
 * reader reads it with every key's type and default.
 */
class ConfigurationMetadataTest {

  private static final String RESOURCE = "META-INF/spring-configuration-metadata.json";

  @Test
  @DisplayName("the committed file is what the registry renders (-DregenerateConfigMetadata=true"
      + " rewrites it)")
  void theCommittedFileIsUpToDate() throws IOException {
    String expected = ConfigurationMetadata.render(ConfigRegistry.discover(),
        ConfigurationMetadata.providers());
    if (Boolean.getBoolean(ConfigurationMetadata.REGENERATE_PROPERTY)) {
      ConfigurationMetadata.write(ConfigurationMetadata.FILE);
    }
    assertThat(Files.exists(ConfigurationMetadata.FILE))
        .as("%s is missing; regenerate it: %s", ConfigurationMetadata.FILE,
            ConfigurationMetadata.REGENERATE).isTrue();
    String committed = Files.readString(ConfigurationMetadata.FILE, StandardCharsets.UTF_8);
    assertThat(committed)
        .as("%s is out of date with the relaykit.* keys the modules declare; regenerate it: %s",
            ConfigurationMetadata.FILE, ConfigurationMetadata.REGENERATE)
        .isEqualTo(expected);
  }

  @Test
  @DisplayName("a key added to a module makes the rendered file differ, so the check above fails")
  void aNewKeyChangesTheRenderedFile() throws IOException {
    List<ConfigKeys> providers = new ArrayList<>(ConfigurationMetadata.providers());
    ConfigKeys extra = new ConfigKeys() {
      @Override
      public String module() {
        return "relaykit-extra";
      }

      @Override
      public List<String> namespaces() {
        return List.of("relaykit.extra");
      }

      @Override
      public List<ConfigKey> keys() {
        return List.of(ConfigKey.of("relaykit.extra.level", ConfigKey.Type.INTEGER, "3",
            "a level"));
      }
    };
    providers.add(extra);
    List<ConfigKeys> nonCore = new ArrayList<>(providers.subList(1, providers.size()));
    String rendered = ConfigurationMetadata.render(
        ConfigRegistry.of(nonCore.toArray(ConfigKeys[]::new)), providers);

    assertThat(rendered).contains("\"name\": \"relaykit.extra.level\"")
        .isNotEqualTo(Files.readString(ConfigurationMetadata.FILE, StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("Spring Boot's metadata reader finds every registered key with its type")
  void bootReadsEveryKey() throws IOException {
    Map<String, ConfigurationMetadataProperty> properties = read().getAllProperties();
    ConfigRegistry registry = ConfigRegistry.discover();

    for (ConfigKey k : registry.keys()) {
      String name = k.isFamily() ? k.name().substring(0, k.name().length() - 2) : k.name();
      assertThat(properties).as("metadata of %s", name).containsKey(name);
      assertThat(properties.get(name).getDescription()).as("description of %s", name)
          .isNotBlank();
    }
    assertThat(properties).hasSize(registry.keys().size() + registry.deprecatedKeys().size());
    java.util.Set<String> namespaces = properties.keySet().stream()
        .map(ConfigKey::namespaceOf).collect(Collectors.toCollection(java.util.TreeSet::new));
    assertThat(namespaces).containsExactly("relaykit.console", "relaykit.h2", "relaykit.idempotency", "relaykit.jdbc",
            "relaykit.kafka",
            "relaykit.rabbitmq", "relaykit.redis", "relaykit.relay", "relaykit.retry",
            "relaykit.spring",
            "relaykit.storage", "relaykit.transport");
  }

  @Test
  @DisplayName("types, defaults and hints are what an IDE needs to check a value")
  void typesDefaultsAndHints() throws IOException {
    Map<String, ConfigurationMetadataProperty> p = read().getAllProperties();

    assertThat(p.get("relaykit.kafka.poll-timeout").getType()).isEqualTo("java.time.Duration");
    assertThat(p.get("relaykit.kafka.poll-timeout").getDefaultValue()).isEqualTo("100ms");
    assertThat(p.get("relaykit.retry.max-attempts").getType()).isEqualTo("java.lang.Integer");
    assertThat(p.get("relaykit.retry.max-attempts").getDefaultValue()).isEqualTo(5);
    assertThat(p.get("relaykit.spring.relay.enabled").getDefaultValue()).isEqualTo(true);
    assertThat(p.get("relaykit.rabbitmq.delay-levels").getType())
        .isEqualTo("java.util.List<java.time.Duration>");
    assertThat(p.get("relaykit.kafka.producer").getType())
        .isEqualTo("java.util.Map<java.lang.String,java.lang.String>");
    // A default that refers to another key is said in words, never given as a value.
    assertThat(p.get("relaykit.jdbc.lease").getDefaultValue()).isNull();
    assertThat(p.get("relaykit.jdbc.lease").getDescription())
        .contains("Default: the value of relaykit.relay.lease.");
    assertThat(p.get("relaykit.jdbc.url").getDescription()).contains("spring.datasource.url");
    assertThat(hints(p.get("relaykit.transport"))).containsExactly("memory", "kafka", "rabbitmq");
    assertThat(hints(p.get("relaykit.storage")))
        .containsExactly("memory", "jdbc", "h2", "postgres");
    assertThat(hints(p.get("relaykit.idempotency.fast-tier"))).containsExactly("none", "redis");
    assertThat(p.get("relaykit.redis.uri").getDescription()).contains("spring.data.redis.url");
    assertThat(p.get("relaykit.redis.journal").getDescription())
        .contains("Not read by the Spring Boot starter");
    assertThat(hints(p.get("relaykit.retry.jitter"))).containsExactly("none", "full", "equal");
  }

  @Test
  @DisplayName("every former relaykit.h2.* key is listed as deprecated, naming its replacement")
  void deprecatedKeysNameTheirReplacement() throws IOException {
    Map<String, ConfigurationMetadataProperty> p = read().getAllProperties();
    Map<String, String> deprecated = ConfigRegistry.discover().deprecatedKeys();

    assertThat(deprecated).containsEntry("relaykit.h2.url", "relaykit.jdbc.url")
        .containsEntry("relaykit.h2.table-prefix", "relaykit.jdbc.table-prefix");
    deprecated.forEach((old, replacement) -> {
      assertThat(p).as(old).containsKey(old);
      assertThat(p.get(old).isDeprecated()).as("%s is deprecated", old).isTrue();
      assertThat(p.get(old).getDeprecation().getReplacement()).as(old).isEqualTo(replacement);
      assertThat(p.get(old).getType()).as(old).isEqualTo(p.get(replacement).getType());
      assertThat(p.get(replacement).isDeprecated()).as(replacement).isFalse();
    });
  }

  private static List<Object> hints(ConfigurationMetadataProperty property) {
    return property.getHints().getValueHints().stream().map(ValueHint::getValue).toList();
  }

  /** The starter's own file, not one of the other jars' files of the same name. */
  private static ConfigurationMetadataRepository read() throws IOException {
    java.net.URL own = null;
    String classes = RelaykitAutoConfiguration.class.getProtectionDomain().getCodeSource()
        .getLocation().toString();
    for (java.net.URL url : java.util.Collections.list(
        ConfigurationMetadataTest.class.getClassLoader().getResources(RESOURCE))) {
      if (url.toString().startsWith(classes) || url.toString().startsWith("jar:" + classes)) {
        own = url;
      }
    }
    assertThat(own).as("the starter's %s on the class path (under %s)", RESOURCE, classes)
        .isNotNull();
    try (InputStream in = own.openStream()) {
      return ConfigurationMetadataRepositoryJsonBuilder.create(in).build();
    }
  }
}

package io.relaykit.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ConfigRegistryTest {

  @Test
  @DisplayName("discover finds the providers registered with ServiceLoader, and core's own keys")
  void discover() {
    ConfigRegistry r = ConfigRegistry.discover();

    assertThat(r.find("relaykit.sample.uri")).get().extracting(ConfigKey::defaultValue)
        .isEqualTo("sample://localhost");
    assertThat(r.find("relaykit.retry.max-attempts")).isPresent();
    assertThat(r.declares("relaykit.sample")).isTrue();
    assertThat(r.declares("relaykit.kafka")).as("no kafka module in queue-core's tests").isFalse();
    assertThat(r.keys()).extracting(ConfigKey::name).isSorted()
        .containsAll(new CoreKeys().keys().stream().map(ConfigKey::name).toList());
  }

  @Test
  @DisplayName("a provider that cannot be loaded, or answers null, fails discovery naming it")
  void brokenProviders(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path services = dir.resolve("META-INF/services");
    java.nio.file.Files.createDirectories(services);
    java.nio.file.Files.writeString(services.resolve(ConfigKeys.class.getName()),
        "com.example.MissingKeys\n");
    try (java.net.URLClassLoader loader = new java.net.URLClassLoader(
        new java.net.URL[] {dir.toUri().toURL()}, ConfigRegistryTest.class.getClassLoader())) {
      assertThatThrownBy(() -> ConfigRegistry.discover(loader))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("com.example.MissingKeys");
    }
    ConfigKeys nullKeys = new ConfigKeys() {
      @Override
      public String module() {
        return "relaykit-null";
      }

      @Override
      public List<String> namespaces() {
        return List.of("relaykit.null");
      }

      @Override
      public List<ConfigKey> keys() {
        return null;
      }
    };
    assertThatThrownBy(() -> ConfigRegistry.of(nullKeys))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(nullKeys.getClass().getName());
  }

  @Test
  @DisplayName("discover() finds providers through relaykit's own loader when the thread's"
      + " context loader cannot see them")
  void contextLoaderBlind() {
    Thread t = Thread.currentThread();
    ClassLoader before = t.getContextClassLoader();
    t.setContextClassLoader(ClassLoader.getPlatformClassLoader());
    try {
      assertThat(ConfigRegistry.discover().declares("relaykit.sample")).isTrue();
    } finally {
      t.setContextClassLoader(before);
    }
  }

  @Test
  @DisplayName("of() holds core's keys and exactly the given providers")
  void of() {
    assertThat(ConfigRegistry.of().find("relaykit.sample.uri")).isEmpty();
    assertThat(ConfigRegistry.of().keys()).hasSameSizeAs(new CoreKeys().keys());
  }

  @Test
  @DisplayName("a family describes every key below it, and only those")
  void family() {
    ConfigRegistry r = ConfigRegistry.of(new SampleKeys());

    assertThat(r.find("relaykit.sample.client.linger.ms")).get()
        .extracting(ConfigKey::name).isEqualTo("relaykit.sample.client.*");
    assertThat(r.find("relaykit.sample.client")).isEmpty();
    assertThat(r.find("relaykit.sample.clientx")).isEmpty();
    assertThat(r.keyOf("RELAYKIT_SAMPLE_CLIENT")).isEmpty();
  }

  @Test
  @DisplayName("two modules declaring one key fail discovery, naming both")
  void duplicate() {
    ConfigKeys copy = new ConfigKeys() {
      @Override
      public String module() {
        return "relaykit-copy";
      }

      @Override
      public List<String> namespaces() {
        return List.of("relaykit.sample");
      }

      @Override
      public List<ConfigKey> keys() {
        return List.of(new SampleKeys().keys().get(0));
      }
    };
    assertThatThrownBy(() -> ConfigRegistry.of(new SampleKeys(), copy))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("relaykit.sample.uri")
        .hasMessageContaining("relaykit-sample").hasMessageContaining("relaykit-copy");
  }

  @Test
  @DisplayName("a module may declare keys only under its own namespaces")
  void outsideNamespace() {
    ConfigKeys stray = new ConfigKeys() {
      @Override
      public String module() {
        return "relaykit-stray";
      }

      @Override
      public List<String> namespaces() {
        return List.of("relaykit.stray");
      }

      @Override
      public List<ConfigKey> keys() {
        return List.of(ConfigKey.of("relaykit.retry.extra", ConfigKey.Type.STRING, null, "d"));
      }
    };
    assertThatThrownBy(() -> ConfigRegistry.of(stray))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("relaykit-stray").hasMessageContaining("relaykit.retry.extra");
  }

  @Test
  @DisplayName("a key must be a relaykit key, and choices go with CHOICE only")
  void keyValidation() {
    assertThatThrownBy(() -> ConfigKey.of("kafka.x", ConfigKey.Type.STRING, null, "d"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'kafka.x'");
    assertThatThrownBy(() -> ConfigKey.choice("relaykit.a.b", null, "d"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("relaykit.a.b");
    assertThat(ConfigKey.choice("relaykit.a.b", "X", "d", "X", "Y").choices())
        .containsExactly("x", "y");
  }

  @Test
  @DisplayName("edit distance counts insertions, deletions and substitutions")
  void editDistance() {
    assertThat(ConfigRegistry.editDistance("max-attempt", "max-attempts")).isEqualTo(1);
    assertThat(ConfigRegistry.editDistance("lease", "lasee")).isEqualTo(2);
    assertThat(ConfigRegistry.editDistance("", "abc")).isEqualTo(3);
    assertThat(ConfigRegistry.editDistance("same", "same")).isZero();
  }
}

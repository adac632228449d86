package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.Settings;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** With every adapter on the class path (as here), the registry holds every module's keys. */
class ConfigKeysOnClassPathTest {

  @Test
  @DisplayName("every adapter registers its keys, and every declared default is a valid value")
  void everyModuleAndDefault() {
    ConfigRegistry registry = ConfigRegistry.discover();

    for (String ns : List.of("relaykit.retry", "relaykit.h2", "relaykit.redis", "relaykit.kafka",
        "relaykit.rabbitmq")) {
      assertThat(registry.declares(ns)).as(ns).isTrue();
    }
    List<String> checked = new ArrayList<>();
    for (ConfigKey key : registry.keys()) {
      String d = key.defaultValue();
      // Defaults that are a sentence or another key ("relaykit.relay.lease") are documentation.
      if (key.isFamily() || d == null || d.isEmpty() || d.contains(" ")
          || d.startsWith("relaykit.")) {
        continue;
      }
      Settings s = Settings.builder().registry(registry).set(key.name(), d).build();
      assertThat(s.get(key.name())).as(key.name()).contains(d);
      checked.add(key.name());
    }
    assertThat(checked).hasSizeGreaterThan(30);
  }
}

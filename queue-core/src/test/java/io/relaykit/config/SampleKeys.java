package io.relaykit.config;

import java.util.List;

/** A module's keys as a test sees them; registered in this test jar's META-INF/services. */
public final class SampleKeys implements ConfigKeys {

  /** For ServiceLoader. */
  public SampleKeys() {}

  @Override
  public String module() {
    return "relaykit-sample";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.sample");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of("relaykit.sample.uri", ConfigKey.Type.STRING, "sample://localhost",
            "where the sample lives"),
        ConfigKey.of("relaykit.sample.api-key", ConfigKey.Type.STRING, null, "a credential")
            .asSecret(),
        ConfigKey.of("relaykit.sample.password", ConfigKey.Type.STRING, null, "a password"),
        ConfigKey.of("relaykit.sample.pool-size", ConfigKey.Type.INTEGER, "4", "connections"),
        ConfigKey.of("relaykit.sample.max-bytes", ConfigKey.Type.LONG, "1024", "a size"),
        ConfigKey.of("relaykit.sample.migrate", ConfigKey.Type.BOOLEAN, "true", "a flag"),
        ConfigKey.of("relaykit.sample.timeout", ConfigKey.Type.DURATION, "5s", "a wait"),
        ConfigKey.of("relaykit.sample.delays", ConfigKey.Type.DURATION_LIST, "1s,10s", "waits"),
        ConfigKey.choice("relaykit.sample.order-scope", "key", "a choice", "key",
            "key-per-destination"),
        ConfigKey.family("relaykit.sample.client", "client settings passed through"));
  }
}

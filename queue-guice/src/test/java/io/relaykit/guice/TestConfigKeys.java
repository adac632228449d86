package io.relaykit.guice;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/** The keys queue-guice's test backends and tests read, registered like an adapter's. */
public final class TestConfigKeys implements ConfigKeys {

  /** For ServiceLoader. */
  public TestConfigKeys() {}

  @Override
  public String module() {
    return "queue-guice-tests";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.fake", "relaykit.spy", "relaykit.x", "relaykit.guice-test",
        "relaykit.sample", "relaykit.samplex");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(FakeStorageBackend.LABEL, ConfigKey.Type.STRING, null, "a label"),
        ConfigKey.of("relaykit.spy.x", ConfigKey.Type.STRING, null, "anything"),
        ConfigKey.of("relaykit.x.count", ConfigKey.Type.STRING, null, "read as an int by a test"),
        ConfigKey.of("relaykit.x.wait", ConfigKey.Type.STRING, null, "read as a duration"),
        ConfigKey.of("relaykit.x.flag", ConfigKey.Type.STRING, null, "read as a boolean"),
        ConfigKey.of("relaykit.guice-test.marker", ConfigKey.Type.STRING, null, "a marker"),
        ConfigKey.of("relaykit.sample.url", ConfigKey.Type.STRING, null, "a URL"),
        ConfigKey.of("relaykit.sample.uri", ConfigKey.Type.STRING, null, "a URI"),
        ConfigKey.of("relaykit.sample.password", ConfigKey.Type.STRING, null, "a password"),
        ConfigKey.of("relaykit.sample.pool-size", ConfigKey.Type.INTEGER, "10", "a size"),
        ConfigKey.of("relaykit.sample.pool-max", ConfigKey.Type.INTEGER, "10", "a size"),
        ConfigKey.of("relaykit.sample.lock-timeout", ConfigKey.Type.DURATION, null, "a wait"),
        ConfigKey.of("relaykit.sample.create-schema", ConfigKey.Type.BOOLEAN, "true", "a flag"),
        ConfigKey.of("relaykit.sample.missing", ConfigKey.Type.BOOLEAN, "true", "unset"),
        ConfigKey.of("relaykit.sample.client-id", ConfigKey.Type.STRING, null, "a client id"),
        ConfigKey.family("relaykit.sample.client", "client settings"),
        ConfigKey.of("relaykit.samplex.other", ConfigKey.Type.STRING, null, "another section"));
  }
}

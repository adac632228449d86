package io.relaykit.config;

import java.util.List;
import java.util.Map;

/**
 * The settings one module understands, found through {@link java.util.ServiceLoader}: a module
 * implements this interface (public, with a public no-argument constructor) and lists the class
 * in {@code META-INF/services/io.relaykit.config.ConfigKeys}. {@link ConfigRegistry#discover()}
 * collects every provider on the class path, and {@link Settings} rejects a {@code relaykit.*}
 * key from an explicit source that no provider declares.
 *
 * <p>Implementations must be cheap and side-effect free: discovery instantiates every provider
 * on the class path each time a registry is discovered.
 */
public interface ConfigKeys {

  /**
   * The artifact that declares these keys, for messages: {@code relaykit-kafka}.
   *
   * @return the module's artifact id
   */
  String module();

  /**
   * The {@code relaykit.<section>} prefixes this module owns, such as {@code relaykit.kafka}: a
   * key under one of them that {@link #keys()} does not list is a typo, answered with the nearest
   * key.
   *
   * @return the owned namespaces, no trailing dot
   */
  List<String> namespaces();

  /**
   * Every key this module reads.
   *
   * @return the keys, each under one of {@link #namespaces()}
   */
  List<ConfigKey> keys();

  /**
   * Former names of this module's keys, still read for one release: each maps a deprecated key
   * to the declared key that replaces it. {@link Settings} reads a value given under the old name
   * (or its environment variable) as the new key, and logs one line naming both; when both are
   * set, the new key wins. An old key must not itself be declared, and must lie under one of
   * {@link #namespaces()}.
   *
   * @return old key to new key; empty by default
   */
  default Map<String, String> deprecatedKeys() {
    return Map.of();
  }
}

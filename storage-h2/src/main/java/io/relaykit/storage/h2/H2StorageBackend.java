package io.relaykit.storage.h2;

import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.storage.jdbc.JdbcStorageBackend;

/**
 * Forwards to {@link JdbcStorageBackend}, which it was renamed to. Not registered with {@link
 * java.util.ServiceLoader}: {@code relaykit.storage=jdbc} (or its aliases {@code h2} and {@code
 * postgres}) finds the new one.
 *
 * @deprecated use {@link JdbcStorageBackend}; this class is removed in the next release.
 */
@Deprecated(since = "0.1.0", forRemoval = true)
public final class H2StorageBackend implements BackendModuleProvider {
  private final JdbcStorageBackend delegate = new JdbcStorageBackend();

  /** Holds no state. */
  public H2StorageBackend() {}

  @Override
  public Kind kind() {
    return delegate.kind();
  }

  @Override
  public String name() {
    return delegate.name();
  }

  /**
   * See {@link JdbcStorageBackend#module(RelayKitConfig)}.
   *
   * @throws IllegalArgumentException naming the key and value when a setting is missing or
   *     invalid
   */
  @Override
  public Module module(RelayKitConfig config) {
    return delegate.module(config);
  }
}

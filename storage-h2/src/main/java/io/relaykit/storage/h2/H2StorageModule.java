package io.relaykit.storage.h2;

import com.google.inject.AbstractModule;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcStorageModule;

/**
 * Forwards to {@link JdbcStorageModule}, which it was renamed to: installs one with the same
 * arguments, so the injector holds the same (exposed) bindings.
 *
 * @deprecated use {@link JdbcStorageModule}; this class is removed in the next release.
 */
@Deprecated(since = "0.1.0", forRemoval = true)
public final class H2StorageModule extends AbstractModule {
  private final JdbcStorageModule delegate;

  /**
   * See {@link JdbcStorageModule#JdbcStorageModule(JdbcStorageConfig, String)}.
   *
   * @param config the database, pool and table settings
   * @param journalName the name of the queue journal this module binds
   * @throws IllegalArgumentException if {@code config} is null or {@code journalName} is blank
   */
  public H2StorageModule(JdbcStorageConfig config, String journalName) {
    this.delegate = new JdbcStorageModule(config, journalName);
  }

  @Override
  protected void configure() {
    install(delegate);
  }

  @Override
  public String toString() {
    return delegate.toString();
  }
}

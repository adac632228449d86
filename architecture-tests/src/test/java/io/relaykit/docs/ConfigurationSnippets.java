package io.relaykit.docs;

// tag::guice[]
import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
// end::guice[]
// tag::settings[]
import io.relaykit.config.RetrySettings;
import io.relaykit.config.Settings;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.util.Properties;
// end::settings[]

/** docs/configuration.md. */
final class ConfigurationSnippets {
  private ConfigurationSnippets() {}

  static Injector guice() {
    // tag::guice[]
    Injector injector = Guice.createInjector(new RelayKitModule(RelayKitConfig.fromSystem()));
    // end::guice[]
    return injector;
  }

  static JdbcStorageConfig settings(Properties properties) {
    // tag::settings[]
    Settings settings = Settings.from(properties, System.getenv());  // relaykit.* and RELAYKIT_*
    RetryPolicy retry = RetrySettings.from(settings).toPolicy();     // checked at startup
    JdbcStorageConfig storage = JdbcStorageConfig.from(settings);
    // end::settings[]
    return retry == null ? null : storage;
  }
}

package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Inject;
import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.PrivateModule;
import com.google.inject.Singleton;
import com.google.inject.name.Named;
import com.google.inject.name.Names;
import io.relaykit.ordering.VersionGuard;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A storage backend registered the way an adapter registers one (META-INF/services), built the
 * way STYLE.md asks: a private module that keeps its helpers to itself and exposes only the SPI,
 * which the public part then makes the override of relaykit's default.
 */
public final class FakeStorageBackend implements BackendModuleProvider {

  static final String LABEL = "relaykit.fake.label";
  static final Key<VersionGuard> EXPOSED = Key.get(VersionGuard.class, Names.named("fake"));

  @Override
  public Kind kind() {
    return Kind.STORAGE;
  }

  @Override
  public String name() {
    return "fake";
  }

  @Override
  public Module module(RelayKitConfig config) {
    String label = config.require(LABEL);
    return new AbstractModule() {
      @Override
      protected void configure() {
        install(new PrivateModule() {
          @Override
          protected void configure() {
            bindConstant().annotatedWith(Names.named("fake.label")).to(label);
            bind(EXPOSED).to(LabelledVersionGuard.class).in(Singleton.class);
            expose(EXPOSED);
          }
        });
        RelayKitModule.override(binder(), VersionGuard.class).to(EXPOSED);
      }
    };
  }

  /** A version guard that remembers which configuration built it. */
  static final class LabelledVersionGuard implements VersionGuard {
    final String label;
    private final Map<String, Long> versions = new ConcurrentHashMap<>();

    @Inject
    LabelledVersionGuard(@Named("fake.label") String label) {
      this.label = label;
    }

    @Override
    public boolean advance(String entityId, long version) {
      Long before = versions.get(entityId);
      if (before != null && before >= version) {
        return false;
      }
      versions.put(entityId, version);
      return true;
    }

    @Override
    public OptionalLong current(String entityId) {
      Long v = versions.get(entityId);
      return v == null ? OptionalLong.empty() : OptionalLong.of(v);
    }
  }
}

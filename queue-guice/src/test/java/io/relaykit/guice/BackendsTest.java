package io.relaykit.guice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider.Kind;
import io.relaykit.ordering.VersionGuard;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class BackendsTest {

  /** A provider built inline, for the cases the class path should not see. */
  private static BackendModuleProvider provider(Kind kind, String name, Module module) {
    return new BackendModuleProvider() {
      @Override
      public Kind kind() {
        return kind;
      }

      @Override
      public String name() {
        return name;
      }

      @Override
      public Module module(RelayKitConfig config) {
        return module;
      }
    };
  }

  @Nested
  @DisplayName("discovery")
  class Discovery {

    @Test
    @DisplayName("providers registered in META-INF/services are found, next to the built-in memory")
    void findsRegistered() {
      Backends backends = Backends.discover();

      assertThat(backends.names(Kind.STORAGE)).containsExactly("fake", "memory");
      assertThat(backends.names(Kind.TRANSPORT)).containsExactly("loopback", "memory");
      assertThat(backends.provider(Kind.STORAGE, "fake")).isInstanceOf(FakeStorageBackend.class);
      assertThat(backends.provider(Kind.TRANSPORT, "loopback"))
          .isInstanceOf(LoopbackTransportBackend.class);
    }

    @Test
    @DisplayName("a class loader without registrations knows only memory")
    void onlyMemoryWithoutRegistrations() throws Exception {
      try (URLClassLoader empty = new URLClassLoader(new URL[0], null)) {
        Backends backends = Backends.discover(empty);

        assertThat(backends.names(Kind.STORAGE)).containsExactly("memory");
        assertThat(backends.names(Kind.TRANSPORT)).containsExactly("memory");
      }
    }
  }

  @Nested
  @DisplayName("selection")
  class Selection {

    @Test
    @DisplayName("an unknown storage name is rejected with the key and every known name")
    void unknownStorage() {
      Backends backends = Backends.discover();

      assertThatThrownBy(() -> backends.provider(Kind.STORAGE, "h3"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unknown storage backend 'h3'")
          .hasMessageContaining("relaykit.storage")
          .hasMessageContaining("known: fake, memory");
    }

    @Test
    @DisplayName("an unknown transport name is rejected with the key and every known name")
    void unknownTransport() {
      RelayKitConfig config = RelayKitConfig.builder().transport("kafka").build();

      assertThatThrownBy(() -> Backends.discover().select(config))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unknown transport backend 'kafka'")
          .hasMessageContaining("relaykit.transport")
          .hasMessageContaining("known: loopback, memory");
    }

    @Test
    @DisplayName("select hands the whole config to the chosen provider and installs its module")
    void selectPassesConfig() {
      AtomicReference<RelayKitConfig> seen = new AtomicReference<>();
      BackendModuleProvider spy = new BackendModuleProvider() {
        @Override
        public Kind kind() {
          return Kind.STORAGE;
        }

        @Override
        public String name() {
          return "spy";
        }

        @Override
        public Module module(RelayKitConfig config) {
          seen.set(config);
          return binder -> binder.bind(String.class).toInstance("from spy");
        }
      };
      RelayKitConfig config = RelayKitConfig.builder().storage("spy")
          .set("relaykit.spy.x", "1").build();

      Module selected = Backends.of(List.of(spy)).select(config);

      assertThat(seen.get()).isSameAs(config);
      assertThat(Guice.createInjector(selected).getInstance(String.class)).isEqualTo("from spy");
    }

    @Test
    @DisplayName("the memory backends bind nothing")
    void memoryBindsNothing() {
      Module memory = Backends.of(List.of()).select(RelayKitConfig.defaults());

      assertThat(Guice.createInjector(memory).getExistingBinding(
          com.google.inject.Key.get(VersionGuard.class))).isNull();
    }
  }

  @Nested
  @DisplayName("bad registrations")
  class BadRegistrations {

    @Test
    @DisplayName("two providers with one kind and name are rejected, naming both classes")
    void duplicate() {
      BackendModuleProvider first = new FakeStorageBackend();
      BackendModuleProvider second = provider(Kind.STORAGE, "fake", binder -> { });

      assertThatThrownBy(() -> Backends.of(List.of(first, second)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("'fake'")
          .hasMessageContaining(FakeStorageBackend.class.getName())
          .hasMessageContaining(second.getClass().getName());
    }

    @Test
    @DisplayName("a provider may not replace the built-in memory backend")
    void memoryTaken() {
      assertThatThrownBy(() -> Backends.of(List.of(
          provider(Kind.TRANSPORT, "memory", binder -> { }))))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("two transport backends are named 'memory'");
    }

    @Test
    @DisplayName("the same name may serve storage and transport")
    void sameNameOtherKind() {
      Backends backends = Backends.of(List.of(
          provider(Kind.STORAGE, "redis", binder -> { }),
          provider(Kind.TRANSPORT, "redis", binder -> { })));

      assertThat(backends.names(Kind.STORAGE)).containsExactly("memory", "redis");
      assertThat(backends.names(Kind.TRANSPORT)).containsExactly("memory", "redis");
    }

    @Test
    @DisplayName("a provider with an invalid name or no kind is rejected")
    void invalidNames() {
      assertThatThrownBy(() -> Backends.of(List.of(provider(Kind.STORAGE, "H2", b -> { }))))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("'H2'");
      assertThatThrownBy(() -> Backends.of(List.of(provider(Kind.STORAGE, null, b -> { }))))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("'null'");
      assertThatThrownBy(() -> Backends.of(List.of(provider(null, "x", b -> { }))))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("kind null");
    }
  }
}

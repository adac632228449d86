package io.relaykit.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TracePropagationTest {

  /** A provider as a tracing module would register it. */
  public static final class Fixed implements TracePropagation {
    @Override
    public Optional<TraceContext> current() {
      return Optional.of(TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7",
          true));
    }
  }

  /** A second provider, sorting after {@link Fixed}. */
  public static final class Other implements TracePropagation {
    @Override
    public Optional<TraceContext> current() {
      return Optional.empty();
    }
  }

  private static ClassLoader withServices(Path dir, String content) throws IOException {
    Path services = dir.resolve("META-INF/services");
    Files.createDirectories(services);
    Files.writeString(services.resolve(TracePropagation.class.getName()), content);
    return new URLClassLoader(new URL[] {dir.toUri().toURL()},
        TracePropagationTest.class.getClassLoader());
  }

  @Test
  @DisplayName("discover finds a ServiceLoader provider; with several, the first by class name")
  void discoversProvider(@TempDir Path dir) throws IOException {
    ClassLoader loader = withServices(dir, Other.class.getName() + "\n" + Fixed.class.getName()
        + "\n");

    TracePropagation found = TracePropagation.discover(loader);

    assertThat(found).isInstanceOf(Fixed.class);
    assertThat(found.current()).isPresent();
  }

  @Test
  @DisplayName("no provider, or one that cannot be loaded, is none()")
  void noneWhenMissingOrBroken(@TempDir Path dir) throws IOException {
    assertThat(TracePropagation.discover(TracePropagationTest.class.getClassLoader()))
        .isSameAs(TracePropagation.none());
    assertThat(TracePropagation.discover(withServices(dir, "io.relaykit.NoSuchClass\n")))
        .isSameAs(TracePropagation.none());
    assertThat(TracePropagation.none().current()).isEmpty();
  }

  @Test
  @DisplayName("the default scopes open nothing and keep the parent")
  void defaultScopes() {
    TraceContext parent = TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7",
        false);
    TracePropagation p = Optional::empty;

    try (TraceScope s = p.publishing("orders", Optional.of(parent))) {
      assertThat(s.context()).contains(parent);
    }
    try (TraceScope s = p.handling("orders", Optional.empty())) {
      assertThat(s.context()).isEmpty();
    }
  }
}

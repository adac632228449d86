package io.relaykit.architecture;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Which module owns which packages, relative to a base package ({@code io.relaykit} for the real
 * code, a fixture package for the tests that prove the rules can fail). A new module adds a line
 * here; a class in a package no module owns breaks {@link RelayKitRules#everyClassBelongsToAModule}
 * so the table cannot silently fall behind.
 */
final class RelayKitModules {

  /** The part a module plays in the layering. */
  enum Role {
    /** queue-core: the JDK and nothing else. */
    CORE,
    /** queue-tck, queue-guice: built on the core, used by adapters. */
    SUPPORT,
    /** A backend or front end: depends on core and support, never on another adapter. */
    ADAPTER,
    /**
     * A framework integration (spring-boot-starter): wires core, support and adapters into a
     * framework, so it may depend on every adapter; only applications depend on it.
     */
    INTEGRATION,
    /**
     * relaykit-test: test support for applications. It may use everything but the applications
     * (core, support, adapters, the Spring integration, JUnit and the TCK); only applications and
     * tests use it.
     */
    TEST_SUPPORT,
    /** examples, benchmarks, chaos: may use everything; nothing uses them. */
    APPLICATION
  }

  /** A module and the package roots (relative to the base) it owns, sub-packages included. */
  record Module(String name, Role role, List<String> roots) {}

  static final List<Module> ALL = List.of(
      new Module("queue-core", Role.CORE, List.of("queue", "retry", "message", "outbox",
          "idempotency", "ordering", "deadletter", "monitor", "inprocess", "internal", "trace",
          "config", "codec")),
      new Module("queue-tck", Role.SUPPORT, List.of("tck")),
      new Module("queue-guice", Role.SUPPORT, List.of("guice")),
      new Module("storage-h2", Role.ADAPTER, List.of("storage.jdbc", "storage.h2")),
      new Module("storage-redis", Role.ADAPTER, List.of("storage.redis")),
      new Module("transport-kafka", Role.ADAPTER, List.of("transport.kafka")),
      new Module("transport-rabbitmq", Role.ADAPTER, List.of("transport.rabbitmq")),
      new Module("frontend-poller", Role.ADAPTER, List.of("poller")),
      new Module("metrics-micrometer", Role.ADAPTER, List.of("metrics.micrometer")),
      new Module("tracing-opentelemetry", Role.ADAPTER, List.of("opentelemetry")),
      new Module("codec-jackson", Role.ADAPTER, List.of("jackson")),
      new Module("console", Role.ADAPTER, List.of("console")),
      new Module("spring-boot-starter", Role.INTEGRATION, List.of("spring")),
      new Module("relaykit-test", Role.TEST_SUPPORT, List.of("test")),
      new Module("relaykit-test-support", Role.TEST_SUPPORT, List.of("testsupport")),
      new Module("examples", Role.APPLICATION, List.of("examples")),
      new Module("benchmarks", Role.APPLICATION, List.of("bench")),
      new Module("relaykit-chaos", Role.APPLICATION, List.of("chaos")));

  private final String base;

  RelayKitModules(String base) {
    this.base = base;
  }

  String base() {
    return base;
  }

  /** The absolute package roots of {@code module}. */
  List<String> packagesOf(Module module) {
    return module.roots().stream().map(r -> base + "." + r).toList();
  }

  /** ArchUnit package patterns ({@code root..}) for every module with {@code role}. */
  String[] patterns(Role role) {
    return ALL.stream().filter(m -> m.role() == role)
        .flatMap(m -> packagesOf(m).stream()).map(p -> p + "..").toArray(String[]::new);
  }

  /** The module owning {@code packageName}: the one with the longest matching root. */
  Optional<Module> moduleOf(String packageName) {
    Module best = null;
    int bestLength = -1;
    for (Module m : ALL) {
      for (String root : packagesOf(m)) {
        if ((packageName.equals(root) || packageName.startsWith(root + "."))
            && root.length() > bestLength) {
          best = m;
          bestLength = root.length();
        }
      }
    }
    return Optional.ofNullable(best);
  }

  /** Whether {@code packageName} is or lies under a package named {@code internal}. */
  static boolean isInternal(String packageName) {
    return ("." + packageName + ".").contains(".internal.");
  }

  static List<Module> byName() {
    return ALL.stream().sorted(Comparator.comparing(Module::name)).toList();
  }
}

package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * What {@code ./mvnw -B install} puts into a local repository, checked on a real install: {@link
 * NestedBuild#installedReactor} installs a fresh copy of the reactor ({@code -DskipTests}, javadoc
 * and sources jars as in the default build) into an empty repository under target/, and this
 * test requires exactly the published artifacts there: relaykit-parent and relaykit-bom (poms),
 * and the fourteen libraries, each with its pom, jar, {@code -sources} jar and {@code -javadoc}
 * jar, plus relaykit-kafka's {@code tests} jar (the in-JVM KRaft broker fixture, which the
 * benchmarks and the invoker's quick-start project use, and which users may use to test against a
 * real broker). Nothing else was installed: every other file in the repository was read through the
 * mirror, not installed. PublishedArtifactsTest checks the same from the poms, without building.
 */
class InstalledArtifactsTest {

  static final List<String> LIBRARIES = List.of("relaykit-core", "relaykit-tck",
      "relaykit-guice", "relaykit-jdbc", "relaykit-redis", "relaykit-kafka", "relaykit-rabbitmq",
      "relaykit-poller", "relaykit-micrometer", "relaykit-opentelemetry", "relaykit-codec-jackson",
      "relaykit-spring-boot-starter", "relaykit-test", "relaykit-console");

  @Test
  @DisplayName("mvn install puts only the published artifacts, each with sources and javadoc jars")
  void installPutsOnlyThePublishedArtifacts() throws Exception {
    String mavenHome = NestedBuild.mavenHome().orElse("");
    assumeTrue(!mavenHome.isBlank(), "needs relaykit.maven.home (set by the pom when Maven runs"
        + " the test)");
    String version = System.getProperty("relaykit.version", "");
    assertThat(version).as("relaykit.version (set by the pom)").isNotBlank();

    NestedBuild.Installed installed = NestedBuild.installedReactor(mavenHome);
    Path repository = installed.repository();

    Map<String, Set<String>> expected = new TreeMap<>();
    expected.put("relaykit-parent", Set.of("relaykit-parent-V.pom"));
    expected.put("relaykit-bom", Set.of("relaykit-bom-V.pom"));
    for (String library : LIBRARIES) {
      Set<String> files = new TreeSet<>(Set.of(library + "-V.pom", library + "-V.jar",
          library + "-V-sources.jar", library + "-V-javadoc.jar"));
      if (library.equals("relaykit-kafka")) {
        files.add(library + "-V-tests.jar");
      }
      expected.put(library, files);
    }
    assertThat(installedFiles(repository.resolve("io").resolve("relaykit"), version))
        .as("artifacts mvn install put under io/relaykit (V = %s)", version)
        .isEqualTo(expected);
    assertThat(installedOutsideRelaykit(repository))
        .as("files installed (not read through the mirror) outside io/relaykit").isEmpty();

    for (String library : LIBRARIES) {
      Path dir = repository.resolve("io/relaykit").resolve(library).resolve(version);
      assertThat(entries(dir.resolve(library + "-" + version + "-sources.jar")))
          .as("sources jar of %s", library).anyMatch(e -> e.endsWith(".java"));
      assertThat(entries(dir.resolve(library + "-" + version + "-javadoc.jar")))
          .as("javadoc jar of %s", library).contains("index.html");
    }
  }

  /** artifactId to its files, the version written as V; metadata files left out. */
  private static Map<String, Set<String>> installedFiles(Path group, String version)
      throws IOException {
    Map<String, Set<String>> out = new TreeMap<>();
    if (!Files.isDirectory(group)) {
      return out;
    }
    try (Stream<Path> artifacts = Files.list(group)) {
      for (Path artifact : artifacts.filter(Files::isDirectory).toList()) {
        Set<String> files = new TreeSet<>();
        try (Stream<Path> all = Files.walk(artifact)) {
          for (Path file : all.filter(Files::isRegularFile).toList()) {
            String name = file.getFileName().toString();
            if (name.startsWith("maven-metadata") || name.equals("_remote.repositories")
                || name.equals("resolver-status.properties")) {
              continue;
            }
            files.add(name.replace(version, "V"));
          }
        }
        out.put(artifact.getFileName().toString(), files);
      }
    }
    return out;
  }

  /**
   * Files whose {@code _remote.repositories} entry has no repository: installed, not downloaded.
   */
  private static List<String> installedOutsideRelaykit(Path repository) throws IOException {
    List<String> out = new ArrayList<>();
    Path relaykit = repository.resolve("io").resolve("relaykit");
    try (Stream<Path> all = Files.walk(repository)) {
      for (Path marker : all.filter(p -> p.getFileName().toString()
          .equals("_remote.repositories")).toList()) {
        if (marker.startsWith(relaykit)) {
          continue;
        }
        for (String line : Files.readAllLines(marker, StandardCharsets.UTF_8)) {
          if (line.endsWith(">=")) {
            out.add(repository.relativize(marker.getParent()) + ": " + line);
          }
        }
      }
    }
    return out;
  }

  private static List<String> entries(Path jar) throws IOException {
    assertThat(jar).isRegularFile();
    try (JarFile file = new JarFile(jar.toFile())) {
      return file.stream().map(e -> e.getName()).toList();
    }
  }
}

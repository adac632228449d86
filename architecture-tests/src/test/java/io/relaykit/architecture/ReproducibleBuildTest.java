package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Builds relaykit-core twice, at different paths, times and time zones, and requires
 * byte-identical jars (classes, sources and javadoc): what project.build.outputTimestamp and the
 * pinned plugins promise. The reactor's own fresh build of the module is the first build; the
 * second is the nested {@code mvn install} of a fresh copy of the whole reactor that
 * InstalledArtifactsTest checks ({@link NestedBuild#installedReactor}, {@code
 * TZ=Pacific/Kiritimati}), so the two tests share one nested build. When the reactor's jars are
 * stale or missing (a build with {@code -Dmaven.javadoc.skip}), a copy of the module alone is built
 * first instead.
 *
 * <p>For the whole reactor, maven-artifact-plugin does the same comparison against a previous
 * install into a scratch repository (see README, "Reproducible builds").
 */
class ReproducibleBuildTest {

  private static final Path ROOT = NestedBuild.ROOT;
  private static final String MODULE = "queue-core";
  private static final String ARTIFACT = "relaykit-core";

  @Test
  @DisplayName("two builds of relaykit-core give byte-identical jar, sources jar and javadoc jar")
  void twoBuildsGiveIdenticalJars() throws Exception {
    String mavenHome = NestedBuild.mavenHome().orElse("");
    assumeTrue(!mavenHome.isBlank(),
        "needs relaykit.maven.home (set by the pom when Maven runs the test)");
    Path work = NestedBuild.WORK.resolve("reproducible");
    NestedBuild.deleteTree(work);

    // The reactor's own build of the module is the first build when it is fresh (it is in
    // mvn verify and in -pl architecture-tests -am).
    Map<String, String> first = reactorBuildIfFresh()
        .orElseGet(() -> build(mavenHome, work.resolve("a"), "UTC"));
    Map<String, String> second = hashJars(NestedBuild.installedReactor(mavenHome).sources()
        .resolve(MODULE).resolve("target"));

    assertThat(first.keySet()).as("artifacts of one build")
        .containsExactlyInAnyOrder(ARTIFACT + "-VERSION.jar", ARTIFACT + "-VERSION-sources.jar",
            ARTIFACT + "-VERSION-javadoc.jar");
    assertThat(second).as("SHA-256 of each artifact, second build vs first").isEqualTo(first);
  }

  /** The reactor's jars of the module, hashed, if all three are newer than every input. */
  private static Optional<Map<String, String>> reactorBuildIfFresh() {
    try {
      Path target = ROOT.resolve(MODULE).resolve("target");
      if (!Files.isDirectory(target)) {
        return Optional.empty();
      }
      List<Path> jars;
      try (Stream<Path> list = Files.list(target)) {
        jars = list.filter(p -> p.toString().endsWith(".jar")).toList();
      }
      if (jars.size() != 3) {
        return Optional.empty();
      }
      long oldestJar = Long.MAX_VALUE;
      for (Path jar : jars) {
        oldestJar = Math.min(oldestJar, Files.getLastModifiedTime(jar).toMillis());
      }
      long newestInput = Files.getLastModifiedTime(ROOT.resolve(MODULE).resolve("pom.xml"))
          .toMillis();
      for (String file : List.of("pom.xml", "LICENSE", "NOTICE")) {
        newestInput = Math.max(newestInput, Files.getLastModifiedTime(ROOT.resolve(file)).toMillis());
      }
      try (Stream<Path> sources = Files.walk(ROOT.resolve(MODULE).resolve("src").resolve("main"))) {
        for (Path source : sources.toList()) {
          newestInput = Math.max(newestInput, Files.getLastModifiedTime(source).toMillis());
        }
      }
      if (newestInput >= oldestJar) {
        return Optional.empty();
      }
      return Optional.of(hashJars(target));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** Copies the parent pom, LICENSE, NOTICE, the module's pom and main sources; builds; hashes. */
  private static Map<String, String> build(String mavenHome, Path root, String timeZone) {
    try {
      return buildOrThrow(mavenHome, root, timeZone);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Map<String, String> buildOrThrow(String mavenHome, Path root, String timeZone)
      throws IOException {
    Files.createDirectories(root);
    for (String file : List.of("pom.xml", "LICENSE", "NOTICE")) {
      Files.copy(ROOT.resolve(file), root.resolve(file));
    }
    NestedBuild.copyTree(ROOT.resolve(MODULE).resolve("pom.xml"),
        root.resolve(MODULE).resolve("pom.xml"));
    NestedBuild.copyTree(ROOT.resolve(MODULE).resolve("src").resolve("main"),
        root.resolve(MODULE).resolve("src").resolve("main"));

    List<String> args = new ArrayList<>(List.of("-o",
        "-f", root.resolve(MODULE).resolve("pom.xml").toString(),
        "package", "-Dmaven.test.skip=true"));
    String localRepository = System.getProperty("relaykit.local.repository", "");
    if (!localRepository.isBlank()) {
      args.add("-Dmaven.repo.local=" + localRepository);
    }
    NestedBuild.run(mavenHome, root, root.resolve("build.log"), timeZone, Duration.ofMinutes(5),
        args.toArray(String[]::new));
    return hashJars(root.resolve(MODULE).resolve("target"));
  }

  private static Map<String, String> hashJars(Path target) throws IOException {
    Map<String, String> hashes = new TreeMap<>();
    try (Stream<Path> jars = Files.list(target)) {
      for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
        String name = jar.getFileName().toString().replaceFirst("-\\d[^-]*(-SNAPSHOT)?", "-VERSION");
        hashes.put(name, sha256(jar));
        checkEntries(jar);
      }
    }
    return hashes;
  }

  /** Every entry carries project.build.outputTimestamp; the main jar names its module. */
  private static void checkEntries(Path jar) throws IOException {
    Instant expected = Instant.parse("2026-01-01T00:00:00Z");
    try (JarFile file = new JarFile(jar.toFile())) {
      file.stream().forEach(entry -> assertThat(entry.getLastModifiedTime().toInstant())
          .as("time of %s in %s", entry.getName(), jar.getFileName()).isEqualTo(expected));
      if (!jar.getFileName().toString().contains("-sources")
          && !jar.getFileName().toString().contains("-javadoc")) {
        assertThat(file.getEntry("META-INF/LICENSE")).as("LICENSE in the jar").isNotNull();
        assertThat(file.getEntry("META-INF/NOTICE")).as("NOTICE in the jar").isNotNull();
        assertThat(file.getManifest().getMainAttributes().getValue("Automatic-Module-Name"))
            .isEqualTo("io.relaykit.core");
      }
    }
  }

  private static String sha256(Path file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buffer = new byte[64 * 1024];
      for (int n; (n = in.read(buffer)) > 0; ) {
        digest.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }
}

package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Builds relaykit-core twice from two copies of its sources, at different paths, times and time
 * zones, and requires byte-identical jars (classes, sources and javadoc): what
 * project.build.outputTimestamp and the pinned plugins promise. The builds run the Maven that runs
 * this build ({@code maven.home}, passed by the pom), offline, against the same local repository,
 * with tests skipped. The reactor's own fresh build of the module counts as the first build, so
 * a normal {@code mvn verify} pays for one extra build of relaykit-core (54-121 s measured on a
 * 2-core machine shared with other builds).
 *
 * <p>For the whole reactor, maven-artifact-plugin does the same comparison against a previous
 * install into a scratch repository (see README, "Reproducible builds").
 */
class ReproducibleBuildTest {

  private static final Path MODULE_DIR = Path.of(System.getProperty("basedir", ""))
      .toAbsolutePath();
  private static final Path ROOT = MODULE_DIR.getParent();
  private static final String MODULE = "queue-core";
  private static final String ARTIFACT = "relaykit-core";

  @Test
  @DisplayName("two builds of relaykit-core give byte-identical jar, sources jar and javadoc jar")
  void twoBuildsGiveIdenticalJars() throws Exception {
    String mavenHome = System.getProperty("relaykit.maven.home", "");
    assumeTrue(!mavenHome.isBlank() && Files.isRegularFile(Path.of(mavenHome, "bin", "mvn")),
        "needs relaykit.maven.home (set by the pom when Maven runs the test)");
    Path work = MODULE_DIR.resolve("target").resolve("reproducible");
    deleteTree(work);

    // The reactor's own build of the module is the first build when it is fresh (it is in
    // mvn verify and in -pl architecture-tests -am): one nested build instead of two.
    Map<String, String> first = reactorBuildIfFresh()
        .orElseGet(() -> build(mavenHome, work.resolve("a"), "UTC"));
    Map<String, String> second = build(mavenHome, work.resolve("b-other-path"),
        "Pacific/Kiritimati");

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
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building in " + root, e);
    }
  }

  private static Map<String, String> buildOrThrow(String mavenHome, Path root, String timeZone)
      throws IOException, InterruptedException {
    Files.createDirectories(root);
    for (String file : List.of("pom.xml", "LICENSE", "NOTICE")) {
      Files.copy(ROOT.resolve(file), root.resolve(file));
    }
    copyTree(ROOT.resolve(MODULE).resolve("pom.xml"), root.resolve(MODULE).resolve("pom.xml"));
    copyTree(ROOT.resolve(MODULE).resolve("src").resolve("main"),
        root.resolve(MODULE).resolve("src").resolve("main"));

    List<String> command = new ArrayList<>(List.of(
        Path.of(mavenHome, "bin", "mvn").toString(), "-B", "-o", "-q",
        "-f", root.resolve(MODULE).resolve("pom.xml").toString(),
        "package", "-Dmaven.test.skip=true"));
    String localRepository = System.getProperty("relaykit.local.repository", "");
    if (!localRepository.isBlank()) {
      command.add("-Dmaven.repo.local=" + localRepository);
    }
    Path log = root.resolve("build.log");
    ProcessBuilder builder = new ProcessBuilder(command).directory(root.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("TZ", timeZone);
    builder.environment().remove("MAVEN_ARGS");
    Process process = builder.start();
    if (!process.waitFor(5, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new AssertionError("build in " + root + " did not finish in 5 minutes; log: " + log);
    }
    assertThat(process.exitValue())
        .as("build in %s failed:%n%s", root, Files.readString(log, StandardCharsets.UTF_8))
        .isZero();

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

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path path : paths.toList()) {
        Path target = to.resolve(from.relativize(path).toString());
        if (Files.isDirectory(path)) {
          Files.createDirectories(target);
        } else {
          Files.createDirectories(target.getParent());
          Files.copy(path, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted((a, b) -> b.compareTo(a)).toList()) {
        Files.delete(path);
      }
    }
  }
}

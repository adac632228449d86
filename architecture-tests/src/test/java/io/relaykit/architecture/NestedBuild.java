package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs the Maven that runs this build ({@code relaykit.maven.home}, passed by the pom) on a copy
 * of the sources, for the tests that check what a build produces: ReproducibleBuildTest and
 * InstalledArtifactsTest. The one expensive build, {@code mvn -B install -DskipTests} of the whole
 * reactor from a fresh copy into a scratch local repository, runs at most once per test JVM and
 * both tests read it. It also passes {@code -Dmaven.test.skip=true}: compiling tests installs
 * nothing (the reactor around this test compiles them), and relaykit-kafka, whose tests jar is
 * published, compiles its tests and writes that jar regardless (its pom).
 */
final class NestedBuild {

  static final Path MODULE_DIR = Path.of(System.getProperty("basedir", "")).toAbsolutePath();
  static final Path ROOT = MODULE_DIR.getParent();
  static final Path WORK = MODULE_DIR.resolve("target").resolve("nested");

  private static Installed installed;

  private NestedBuild() {}

  /** The Maven home the pom passes, if Maven runs this test. */
  static Optional<String> mavenHome() {
    String home = System.getProperty("relaykit.maven.home", "");
    return !home.isBlank() && Files.isRegularFile(Path.of(home, "bin", "mvn"))
        ? Optional.of(home) : Optional.empty();
  }

  /**
   * What {@code mvn -B install -DskipTests -Dmaven.test.skip=true} of a fresh copy of the reactor
   * put into an empty local repository: the copy (at {@code target/nested/install/src}, another
   * path than the reactor's, built with {@code TZ=Pacific/Kiritimati}) and the repository
   * ({@code .../repo}). Third-party artifacts and plugins are read from this build's local
   * repository through the invoker's mirror settings (src/it/settings.xml), so the build needs no
   * network and installs nothing there.
   */
  static synchronized Installed installedReactor(String mavenHome) {
    if (installed == null) {
      try {
        Path base = WORK.resolve("install");
        deleteTree(base);
        Path src = base.resolve("src");
        Path repo = base.resolve("repo");
        copySources(ROOT, src);
        Path settings = base.resolve("settings.xml");
        String local = System.getProperty("relaykit.local.repository", "");
        Path outer = local.isBlank() ? Path.of(System.getProperty("user.home"), ".m2", "repository")
            : Path.of(local);
        Files.writeString(settings, Files.readString(MODULE_DIR.resolve("src/it/settings.xml"),
                StandardCharsets.UTF_8)
            .replace("@localRepositoryUrl@", outer.toAbsolutePath().toUri().toString()),
            StandardCharsets.UTF_8);
        long start = System.nanoTime();
        run(mavenHome, src, base.resolve("build.log"), "Pacific/Kiritimati", Duration.ofMinutes(20),
            "-s", settings.toString(), "-Dmaven.repo.local=" + repo, "install", "-DskipTests",
            "-Dmaven.test.skip=true");
        installed = new Installed(src, repo, Duration.ofNanos(System.nanoTime() - start));
        System.out.printf("nested mvn install of the reactor took %d s%n",
            installed.took().toSeconds());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return installed;
  }

  /** A finished nested install: the sources it built, its local repository, how long it took. */
  record Installed(Path sources, Path repository, Duration took) {}

  /**
   * Runs {@code mvn -B -q args} in {@code dir} with {@code TZ=timeZone}, logging to {@code log};
   * fails the test with the log if Maven fails or outlasts {@code timeout}.
   */
  static void run(String mavenHome, Path dir, Path log, String timeZone, Duration timeout,
      String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(mavenHome, "bin", "mvn").toString(), "-B", "-q"));
    command.addAll(List.of(args));
    Files.createDirectories(log.getParent());
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("TZ", timeZone);
    builder.environment().remove("MAVEN_ARGS");
    Process process = builder.start();
    try {
      if (!process.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("mvn " + String.join(" ", args) + " in " + dir
            + " did not finish in " + timeout + "; log: " + log);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building in " + dir, e);
    }
    assertThat(process.exitValue())
        .as("mvn %s in %s failed:%n%s", String.join(" ", args), dir,
            Files.readString(log, StandardCharsets.UTF_8))
        .isZero();
  }

  /**
   * Copies what a fresh clone of {@code root} holds into {@code to}: the files git tracks plus
   * untracked files it does not ignore (so uncommitted work is built too); without git, every
   * file outside {@code target} and {@code .git} directories and the root's {@code data}.
   */
  static void copySources(Path root, Path to) throws IOException {
    List<Path> files = gitFiles(root).orElseGet(() -> walkSources(root));
    for (Path relative : files) {
      Path from = root.resolve(relative);
      if (!Files.isRegularFile(from)) {
        continue; // deleted in the work tree, still in git's index
      }
      Path target = to.resolve(relative.toString());
      Files.createDirectories(target.getParent());
      Files.copy(from, target, StandardCopyOption.COPY_ATTRIBUTES);
    }
  }

  private static Optional<List<Path>> gitFiles(Path root) {
    if (!Files.exists(root.resolve(".git"))) {
      return Optional.empty();
    }
    try {
      Process git = new ProcessBuilder("git", "ls-files", "-z", "--cached", "--others",
          "--exclude-standard").directory(root.toFile()).redirectErrorStream(false).start();
      byte[] out = git.getInputStream().readAllBytes();
      if (!git.waitFor(1, TimeUnit.MINUTES) || git.exitValue() != 0) {
        return Optional.empty();
      }
      List<Path> files = new ArrayList<>();
      for (String name : new String(out, StandardCharsets.UTF_8).split("\0")) {
        if (!name.isEmpty()) {
          files.add(Path.of(name));
        }
      }
      return files.isEmpty() ? Optional.empty() : Optional.of(files);
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private static List<Path> walkSources(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      return paths.filter(Files::isRegularFile).map(root::relativize)
          .filter(p -> {
            if (p.getName(0).toString().equals("data")) {
              return false; // the demo's data, ignored by .gitignore
            }
            for (Path part : p) {
              String name = part.toString();
              if (name.equals("target") || name.equals(".git")) {
                return false;
              }
            }
            return true;
          }).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void copyTree(Path from, Path to) throws IOException {
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

  static void deleteTree(Path root) throws IOException {
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

package io.relaykit.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Scratch directories for benchmarks that write files: under {@code -Drelaykit.bench.dir}, else
 * {@code benchmarks/target/bench-tmp} when run from the repository root (as {@code ./relaykit
 * bench} does), else {@code target/bench-tmp}. Each benchmark deletes its directory when done.
 */
final class BenchDirs {
  private BenchDirs() {}

  static Path create(String prefix) throws IOException {
    return Files.createTempDirectory(Files.createDirectories(root()), prefix + "-");
  }

  static void delete(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete benchmark directory " + dir, e);
    }
  }

  private static Path root() {
    String configured = System.getProperty("relaykit.bench.dir");
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    Path module = Path.of("benchmarks", "target");
    return Files.isDirectory(module) ? module.resolve("bench-tmp") : Path.of("target", "bench-tmp");
  }
}

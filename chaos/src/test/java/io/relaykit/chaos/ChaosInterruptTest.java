package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.Await;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ctrl-C: a chaos run started as its own JVM gets SIGINT mid-load; its shutdown hook kills the
 * demo instance's process tree and deletes the scratch folder before the JVM exits.
 */
class ChaosInterruptTest {
  private static final Pattern SCRATCH = Pattern.compile("scratch (\\S+)");
  private static final Pattern PID =
      Pattern.compile("instance 0 listening on \\S+ \\(pid (\\d+)\\)");

  @TempDir
  Path report;

  @Test
  @DisplayName("SIGINT during the load leaves no demo process and no scratch folder")
  void ctrlCCleansUp() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process chaos = new ProcessBuilder(List.of(java, "-cp", System.getProperty("java.class.path"),
        ChaosRun.class.getName(), "--orders", "100000", "--rate", "20", "--faults", "none",
        "--report", report.toString())).redirectErrorStream(true).start();
    CompletableFuture<Path> scratch = new CompletableFuture<>();
    CompletableFuture<Long> demoPid = new CompletableFuture<>();
    StringBuffer log = new StringBuffer();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(chaos.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          log.append(line).append('\n');
          Matcher s = SCRATCH.matcher(line);
          if (s.find()) {
            scratch.complete(Path.of(s.group(1)));
          }
          Matcher p = PID.matcher(line);
          if (p.find()) {
            demoPid.complete(Long.parseLong(p.group(1)));
          }
        }
      } catch (java.io.IOException e) {
        // the run ended
      }
      demoPid.completeExceptionally(new AssertionError("chaos exited early:\n" + log));
    }, "chaos-output");
    reader.setDaemon(true);
    reader.start();
    try {
      long pid = demoPid.get(120, TimeUnit.SECONDS);
      Path dir = scratch.get(1, TimeUnit.SECONDS);
      assertThat(ProcessHandle.of(pid)).hasValueSatisfying(h -> assertThat(h.isAlive()).isTrue());
      assertThat(dir).isDirectory();
      // Let orders flow, then Ctrl-C.
      Await.until(Duration.ofSeconds(30), "the demo wrote its database",
          () -> Files.exists(dir.resolve("data")));
      Process kill = new ProcessBuilder("kill", "-INT", Long.toString(chaos.pid())).start();
      assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(chaos.waitFor(60, TimeUnit.SECONDS)).as("chaos exits on SIGINT:\n%s", log)
          .isTrue();
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
          .as("demo pid %d after Ctrl-C", pid).isFalse();
      assertThat(dir).doesNotExist();
    } finally {
      chaos.destroyForcibly();
      if (demoPid.isDone() && !demoPid.isCompletedExceptionally()) {
        ProcessHandle.of(demoPid.get()).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
  }
}

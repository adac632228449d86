package io.relaykit.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A test fixture: the demo ({@link CheckoutDemo}) as a child JVM on this test's class path, started
 * with command-line options and environment variables as a user would, on a free port; and a
 * {@link DemoHttp} client for it. {@link #kill()} is {@code kill -9}. Costs a JVM start (a few
 * seconds on a busy machine).
 */
final class DemoProcess implements AutoCloseable {
  private static final Pattern LISTENING =
      Pattern.compile("relaykit demo listening on http://127\\.0\\.0\\.1:(\\d+)");

  final Process process;
  final DemoHttp http;
  private final StringBuffer log;
  private final AtomicBoolean cut;
  private final Thread reader;

  private DemoProcess(Process process, int port, StringBuffer log, AtomicBoolean cut,
      Thread reader) {
    this.process = process;
    this.http = new DemoHttp(URI.create("http://127.0.0.1:" + port));
    this.log = log;
    this.cut = cut;
    this.reader = reader;
  }

  /** What the demo printed so far (standard output and error, the first 64 000 characters). */
  String output() {
    return log.toString();
  }

  /**
   * Everything the demo printed, once it has exited and its output is read to the end.
   *
   * @throws AssertionError if the process still runs or its output is not read within 10 s
   */
  String outputAtExit() throws InterruptedException {
    if (process.isAlive()) {
      throw new AssertionError("the demo still runs");
    }
    reader.join(10_000);
    if (reader.isAlive()) {
      throw new AssertionError("the demo's output was not read to its end within 10 s");
    }
    return output();
  }

  /** Whether the demo printed more than {@link #output()} kept. */
  boolean outputCut() {
    return cut.get();
  }

  /** A demo run to its end: exit code and everything it printed. */
  record Exited(int exitCode, String output) {}

  /**
   * Starts the demo like {@link #start} and waits up to {@code timeout} for it to exit by itself
   * (a start that fails).
   *
   * @throws AssertionError with the output if it still runs after {@code timeout} (it is killed)
   */
  static Exited runToExit(Map<String, String> env, Duration timeout, String... options)
      throws Exception {
    Process p = builder(env, options).start();
    CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "(output unreadable: " + e + ")";
      }
    });
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError("the demo still ran after " + timeout + ":\n"
          + out.get(10, TimeUnit.SECONDS));
    }
    return new Exited(p.exitValue(), out.get(10, TimeUnit.SECONDS));
  }

  private static ProcessBuilder builder(Map<String, String> env, String... options) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        CheckoutDemo.class.getName(), "--port", "0"));
    command.addAll(List.of(options));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    env.forEach((name, value) -> {
      if (value == null) {
        builder.environment().remove(name);
      } else {
        builder.environment().put(name, value);
      }
    });
    return builder;
  }

  /**
   * Starts the demo with {@code --port 0} and {@code options}, {@code env} added to this JVM's
   * environment (a null value removes that variable), and waits until it prints the port it
   * listens on.
   *
   * @throws AssertionError with the demo's output if it exits before listening
   */
  static DemoProcess start(Map<String, String> env, String... options) throws Exception {
    Process p = builder(env, options).start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    StringBuffer log = new StringBuffer();
    AtomicBoolean cut = new AtomicBoolean();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (log.length() < 64_000) {
            log.append(line).append('\n');
          } else {
            cut.set(true);
          }
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            port.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException e) {
        // the process was killed; the log so far is kept
      }
      port.completeExceptionally(new AssertionError("the demo exited before listening:\n" + log));
    }, "demo-output");
    reader.setDaemon(true);
    reader.start();
    try {
      // A first start with its own Kafka broker formats and starts the broker first.
      return new DemoProcess(p, port.get(120, TimeUnit.SECONDS), log, cut, reader);
    } catch (Exception | Error e) {
      p.destroyForcibly();
      throw e;
    }
  }

  /** {@code kill -9}, and waits until the process is gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      throw new AssertionError("the demo did not die within 10 s of SIGKILL");
    }
  }

  /** SIGTERM (the demo's graceful shutdown), and waits until the process is gone. */
  void stop() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("the demo did not stop within 60 s of SIGTERM:\n" + output());
    }
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}

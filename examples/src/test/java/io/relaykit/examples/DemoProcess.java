package io.relaykit.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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

  private DemoProcess(Process process, int port) {
    this.process = process;
    this.http = new DemoHttp(URI.create("http://127.0.0.1:" + port));
  }

  /**
   * Starts the demo with {@code --port 0} and {@code options}, {@code env} added to this JVM's
   * environment, and waits until it prints the port it listens on.
   *
   * @throws AssertionError with the demo's output if it exits before listening
   */
  static DemoProcess start(Map<String, String> env, String... options) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        CheckoutDemo.class.getName(), "--port", "0"));
    command.addAll(List.of(options));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().putAll(env);
    Process p = builder.start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    StringBuffer log = new StringBuffer();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (log.length() < 64_000) {
            log.append(line).append('\n');
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
      return new DemoProcess(p, port.get(60, TimeUnit.SECONDS));
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

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}

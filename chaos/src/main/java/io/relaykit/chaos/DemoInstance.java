package io.relaykit.chaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One checkout demo instance as a child JVM: the command {@code ./relaykit demo} runs ({@code
 * java -cp ... io.relaykit.examples.CheckoutDemo}), on this JVM's class path, with its own HTTP
 * port that stays the same across restarts. Its output is appended to a log file.
 *
 * <p>{@link #kill()} is kill -9 of the process and every descendant; it waits until they are
 * gone. A start costs a JVM start (a few seconds on a busy 2-core machine); a start that does not
 * print its listening line within 120 s fails with the tail of its output.
 */
final class DemoInstance implements AutoCloseable {
  static final String MAIN = "io.relaykit.examples.CheckoutDemo";
  private static final Pattern LISTENING =
      Pattern.compile("relaykit demo listening on http://127\\.0\\.0\\.1:(\\d+)");
  private static final long START_TIMEOUT_S = 120;

  final int index;
  private final List<String> args;
  private final Map<String, String> env;
  private final List<String> jvmPrefix;
  private final Path log;
  private volatile Process process;
  private volatile int port;
  private volatile boolean up;
  /** Set by {@link #close()}: no start after it (a restart racing Ctrl-C leaves no orphan). */
  private volatile boolean closed;
  private int starts;

  /**
   * @param jvmPrefix words before {@code java} (empty; or a wrapper such as faketime's)
   */
  DemoInstance(int index, List<String> args, Map<String, String> env, List<String> jvmPrefix,
      Path log) {
    this.index = index;
    this.args = List.copyOf(args);
    this.env = Map.copyOf(env);
    this.jvmPrefix = List.copyOf(jvmPrefix);
    this.log = log;
  }

  /** Starts the JVM and waits until it listens (on its old port after a restart). */
  void start() throws IOException {
    start(Map.of());
  }

  /**
   * Starts the JVM with {@code extraEnv} over its environment (a skewed clock's variables) and
   * waits until it listens.
   */
  synchronized void start(Map<String, String> extraEnv) throws IOException {
    if (closed) {
      throw new IOException("demo instance " + index + " is closed");
    }
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(jvmPrefix);
    command.addAll(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp", System.getProperty("java.class.path"), MAIN, "--port", Integer.toString(port)));
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().putAll(env);
    builder.environment().putAll(extraEnv);
    starts++;
    Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    out.write("---- start " + starts + " of instance " + index + ": " + String.join(" ", args)
        + (extraEnv.isEmpty() ? "" : " with " + extraEnv) + "\n");
    out.flush();
    Process p = builder.start();
    CompletableFuture<Integer> listening = new CompletableFuture<>();
    StringBuffer tail = new StringBuffer();
    Thread reader = new Thread(() -> {
      try (out; BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          out.write(line);
          out.write('\n');
          out.flush();
          if (tail.length() > 8_000) {
            tail.delete(0, tail.length() - 4_000);
          }
          tail.append(line).append('\n');
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            listening.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException e) {
        // the process died; what it printed is in the log
      }
      listening.completeExceptionally(new IOException("demo instance " + index
          + " exited before listening (exit " + exitCode(p) + "):\n" + tail));
    }, "chaos-demo-" + index + "-output");
    reader.setDaemon(true);
    reader.start();
    process = p;
    if (closed) { // close() ran while this process started: it must not outlive the run
      kill();
      throw new IOException("demo instance " + index + " was closed while starting");
    }
    try {
      port = listening.get(START_TIMEOUT_S, TimeUnit.SECONDS);
      up = true;
    } catch (ExecutionException e) {
      kill();
      throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
    } catch (TimeoutException e) {
      kill();
      throw new IOException("demo instance " + index + " did not listen within "
          + START_TIMEOUT_S + " s:\n" + tail);
    } catch (InterruptedException e) {
      kill();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while starting demo instance " + index);
    }
  }

  private static String exitCode(Process p) {
    try {
      return p.waitFor(5, TimeUnit.SECONDS) ? Integer.toString(p.exitValue()) : "still running";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  /**
   * kill -9 of the process and its descendants; waits up to 10 s for each to be gone. Not
   * synchronized, so it also works while a start waits for the listening line.
   */
  void kill() {
    up = false;
    Process p = process;
    if (p == null) {
      return;
    }
    List<ProcessHandle> all = new ArrayList<>(p.descendants().toList());
    all.add(p.toHandle());
    for (ProcessHandle h : all) {
      h.destroyForcibly();
    }
    for (ProcessHandle h : all) {
      try {
        h.onExit().get(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException | TimeoutException e) {
        // reported by alive() staying true; nothing more to do here
      }
    }
  }

  /** Whether it was started, listens and was not killed since. */
  boolean up() {
    Process p = process;
    return up && p != null && p.isAlive();
  }

  long pid() {
    Process p = process;
    return p == null ? -1 : p.pid();
  }

  URI base() {
    return URI.create("http://127.0.0.1:" + port);
  }

  int port() {
    return port;
  }

  /** Kills the process and refuses any later start. */
  @Override
  public void close() {
    closed = true;
    kill();
  }
}

package io.relaykit.examples.kafka;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.Uuid;

/**
 * A real single-node Kafka broker (Kafka 4.3, KRaft, one combined broker + controller node) run as
 * a child process of this JVM: {@code java -cp <this JVM's class path> kafka.Kafka
 * server.properties} (through {@link BrokerMain}), listening on 127.0.0.1 only, with its data, its
 * {@code server.properties} and its log ({@code broker.log}) in {@code dataDir}. For {@code
 * ./relaykit demo --transport kafka} when no broker is configured, and for the chaos runs, which
 * {@link #kill()} and {@link #restart()} it.
 *
 * <p>The server's jars come from the examples module's runtime class path (Maven resolves {@code
 * org.apache.kafka:kafka_2.13} at build time), so nothing is downloaded at run time. The first
 * start formats the data directory ({@code kafka.tools.StorageTool format} with a fresh cluster
 * id); later starts on the same directory keep every topic, record and committed offset.
 *
 * <p>Guarantees: {@link #start} and {@link #restart} return only once the broker answers requests
 * (an ApiVersions round trip, see {@link KafkaPing}), or throw within {@link #START_TIMEOUT} with
 * the tail of {@code broker.log}; {@link #kill()} and {@link #close()} return only once the process
 * has exited. The broker also exits, within moments, when this JVM exits without closing it, even
 * by {@code kill -9}: it halts at the end of its standard input, a pipe that only this JVM holds
 * (see {@link BrokerMain}). There is no shutdown hook, so a demo's own shutdown hook can close its
 * Kafka clients first and the broker last.
 *
 * <p>Costs: one JVM of at most about 400 MB (heap capped at 320 MB), a few seconds per start on a
 * quiet machine (tens of seconds on a loaded 2-core one), one more short JVM for the first start's
 * format step.
 *
 * <p>Ports: the broker listens on {@code port} and advertises {@code 127.0.0.1:advertisedPort} in
 * its metadata. With a TCP fault proxy in front of it, pass the proxy's port as {@code
 * advertisedPort}: clients bootstrap through the proxy and reconnect through it after every
 * metadata refresh. The controller listener gets a free port of its own. Thread-safe.
 */
public final class LocalKafkaBroker implements AutoCloseable {
  /** How long a start or restart may take before it fails. */
  public static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  /** How long {@link #close()} waits for a graceful stop before it kills the process. */
  static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);
  private static final String HOST = "127.0.0.1";

  private final Path dataDir;
  private final int port;
  private final int advertisedPort;
  /** Internal (never advertised); a new one when a restart finds it taken. */
  private int controllerPort;
  private final Path config;
  private final Path log;
  private final Path pidFile;
  private Process process;
  /** The write end of the broker's standard input: held, never written (see BrokerMain). */
  private OutputStream lifeline;
  private boolean closed;

  private LocalKafkaBroker(Path dataDir, int port, int advertisedPort, int controllerPort) {
    this.dataDir = dataDir;
    this.port = port;
    this.advertisedPort = advertisedPort;
    this.controllerPort = controllerPort;
    this.config = dataDir.resolve("server.properties");
    this.log = dataDir.resolve("broker.log");
    this.pidFile = dataDir.resolve("broker.pid");
  }

  /**
   * Starts a broker on {@code dataDir} (created if missing; formatted on first use, reused after)
   * and waits until it answers.
   *
   * @param port the port to listen on (127.0.0.1); 0 picks a free one, kept for later restarts
   * @param advertisedPort the port clients are told to connect to: {@code port} without a proxy,
   *     the proxy's port with one; 0 means the same as {@code port}
   * @throws IllegalArgumentException for a port outside 0..65535
   * @throws IllegalStateException if the Kafka server is not on the class path, the port is taken,
   *     or the broker does not answer within {@link #START_TIMEOUT} (with the tail of its log)
   */
  public static LocalKafkaBroker start(Path dataDir, int port, int advertisedPort) {
    if (dataDir == null) {
      throw new IllegalArgumentException("dataDir must not be null");
    }
    checkPort("port", port);
    checkPort("advertisedPort", advertisedPort);
    if (LocalKafkaBroker.class.getClassLoader().getResource("kafka/Kafka.class") == null) {
      throw new IllegalStateException("the Kafka server (org.apache.kafka:kafka_2.13) is not on"
          + " this class path; run from the examples module's class path");
    }
    Path dir = dataDir.toAbsolutePath().normalize();
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("could not create the Kafka data directory " + dir, e);
    }
    int listen = port == 0 ? freePort() : port;
    int advertised = advertisedPort == 0 ? listen : advertisedPort;
    int controller = freePort();
    LocalKafkaBroker broker = new LocalKafkaBroker(dir, listen, advertised, controller);
    broker.stopOrphan();
    broker.writeConfig();
    broker.formatIfNeeded();
    broker.launchAndAwait();
    return broker;
  }

  /** Where clients connect: {@code 127.0.0.1:advertisedPort} (the proxy's port, if one). */
  public String bootstrap() {
    return HOST + ":" + advertisedPort;
  }

  /** The port the broker itself listens on. */
  public int port() {
    return port;
  }

  /** The broker's data directory (absolute): its log segments, config, pid file and log. */
  public Path dataDir() {
    return dataDir;
  }

  /** The broker's log file (its stdout and stderr, appended across restarts). */
  public Path logFile() {
    return log;
  }

  /**
   * The broker process's id.
   *
   * @throws IllegalStateException once closed
   */
  public synchronized long pid() {
    requireOpen();
    return process.pid();
  }

  /** Whether the broker process is running (it may still be starting). */
  public synchronized boolean isAlive() {
    return process != null && process.isAlive();
  }

  /**
   * {@code kill -9} of the broker process, and waits until it has exited; the data directory stays
   * as the crash left it. No-op if it is not running.
   *
   * @throws IllegalStateException if the process does not exit within 30 s, or once closed
   */
  public synchronized void kill() {
    requireOpen();
    killProcess();
  }

  /**
   * Starts the broker again on the same data directory and ports, and waits until it answers. A
   * broker that still runs is stopped first (gracefully, killed after 30 s).
   *
   * @throws IllegalStateException if a port is taken or the broker does not answer within {@link
   *     #START_TIMEOUT}, or once closed
   */
  public synchronized void restart() {
    requireOpen();
    stopProcess();
    launchAndAwait();
  }

  /**
   * Stops the broker (SIGTERM, a controlled shutdown; {@code kill -9} after 30 s) and waits until
   * the process has exited. The data directory is left in place. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      stopProcess();
    } finally {
      try {
        Files.deleteIfExists(pidFile);
      } catch (IOException e) {
        // a stale pid file is checked against the process's command line before it is used
      }
    }
  }

  @Override
  public String toString() {
    return "LocalKafkaBroker[" + bootstrap() + ", listening on " + HOST + ":" + port + ", data "
        + dataDir + "]";
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("this LocalKafkaBroker is closed");
    }
  }

  private static void checkPort(String name, int port) {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException(name + " must be in 0..65535, was " + port);
    }
  }

  /**
   * A port on 127.0.0.1 that was free a moment ago (for a broker or a proxy in front of it), below
   * Linux's default ephemeral range (32768-60999) when one is free there: the outgoing connections
   * of a busy fault run take their local ports from that range, and one of them could hold a
   * broker's port while it restarts.
   */
  public static int freePort() {
    java.util.SplittableRandom random = new java.util.SplittableRandom();
    for (int i = 0; i < 50; i++) {
      int candidate = 20_000 + random.nextInt(12_000);
      if (portFree(candidate)) {
        return candidate;
      }
    }
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("could not find a free port on " + HOST, e);
    }
  }

  private static boolean portFree(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port), 1);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * A broker left running on this data directory by a JVM that died before its broker noticed (it
   * halts within moments of its parent's death) is waited for, then killed: it holds the data
   * directory's lock.
   */
  private void stopOrphan() {
    Optional<ProcessHandle> orphan = readPid().flatMap(ProcessHandle::of)
        .filter(ProcessHandle::isAlive)
        .filter(h -> commandLine(h).contains(BrokerMain.class.getName())
            && commandLine(h).contains(config.toString()));
    orphan.ifPresent(h -> {
      try {
        h.onExit().get(5, TimeUnit.SECONDS);
      } catch (Exception e) {
        h.destroyForcibly();
        try {
          h.onExit().get(30, TimeUnit.SECONDS);
        } catch (Exception e2) {
          throw new IllegalStateException("a Kafka broker left on " + dataDir + " (pid "
              + h.pid() + ") does not exit", e2);
        }
      }
    });
  }

  /**
   * A process's full command line: {@code /proc/PID/cmdline} on Linux, since {@code
   * ProcessHandle.Info.commandLine()} stops at 4 096 characters and the broker's class path alone
   * is longer.
   */
  private static String commandLine(ProcessHandle h) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(h.pid()), "cmdline"));
      return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ');
    } catch (IOException | RuntimeException e) {
      return h.info().commandLine().orElse("");
    }
  }

  private Optional<Long> readPid() {
    try {
      return Optional.of(Long.parseLong(Files.readString(pidFile).trim()));
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  private void writeConfig() {
    Properties p = new Properties();
    p.setProperty("process.roles", "broker,controller");
    p.setProperty("node.id", "1");
    p.setProperty("controller.quorum.voters", "1@" + HOST + ":" + controllerPort);
    p.setProperty("listeners", "PLAINTEXT://" + HOST + ":" + port + ",CONTROLLER://" + HOST + ":"
        + controllerPort);
    p.setProperty("advertised.listeners", "PLAINTEXT://" + HOST + ":" + advertisedPort);
    p.setProperty("controller.listener.names", "CONTROLLER");
    p.setProperty("inter.broker.listener.name", "PLAINTEXT");
    p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.setProperty("log.dirs", dataDir.resolve("log").toString());
    // One node: the internal topics cannot have the default replication factor of 3.
    p.setProperty("offsets.topic.replication.factor", "1");
    p.setProperty("offsets.topic.num.partitions", "4");
    p.setProperty("transaction.state.log.replication.factor", "1");
    p.setProperty("transaction.state.log.min.isr", "1");
    p.setProperty("transaction.state.log.num.partitions", "4");
    p.setProperty("share.coordinator.state.topic.replication.factor", "1");
    p.setProperty("share.coordinator.state.topic.min.isr", "1");
    p.setProperty("share.coordinator.state.topic.num.partitions", "4");
    p.setProperty("min.insync.replicas", "1");
    p.setProperty("num.partitions", "1");
    p.setProperty("auto.create.topics.enable", "true");
    p.setProperty("group.initial.rebalance.delay.ms", "0");
    p.setProperty("group.min.session.timeout.ms", "1000");
    p.setProperty("group.consumer.min.session.timeout.ms", "1000");
    p.setProperty("group.consumer.min.heartbeat.interval.ms", "500");
    p.setProperty("group.consumer.heartbeat.interval.ms", "500");
    // After a kill -9 the restarted controller refuses the broker's new registration until the
    // old one's session times out (default 9 s, most of a restart): 4 s, heartbeats every 0.5 s.
    p.setProperty("broker.session.timeout.ms", "4000");
    p.setProperty("broker.heartbeat.interval.ms", "500");
    // Small: few threads, small segments, a small log-cleaner buffer (the default is 128 MB).
    p.setProperty("num.network.threads", "2");
    p.setProperty("num.io.threads", "2");
    p.setProperty("background.threads", "2");
    p.setProperty("num.recovery.threads.per.data.dir", "1");
    p.setProperty("num.replica.fetchers", "1");
    p.setProperty("log.cleaner.threads", "1");
    p.setProperty("log.cleaner.dedupe.buffer.size", String.valueOf(8 * 1024 * 1024));
    p.setProperty("log.segment.bytes", String.valueOf(1024 * 1024));
    try (Writer w = Files.newBufferedWriter(config, StandardCharsets.UTF_8)) {
      p.store(w, "written by relaykit's LocalKafkaBroker on every start");
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + config, e);
    }
  }

  private void formatIfNeeded() {
    if (Files.exists(dataDir.resolve("log").resolve("meta.properties"))) {
      return;
    }
    List<String> command = java("-Xmx128m");
    command.addAll(List.of("kafka.tools.StorageTool", "format", "--cluster-id",
        Uuid.randomUuid().toString(), "--config", config.toString(), "--ignore-formatted"));
    Process format = startProcess(command);
    try {
      // Closing its input at once is harmless: StorageTool does not read it.
      format.getOutputStream().close();
      if (!format.waitFor(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        format.destroyForcibly();
        throw new IllegalStateException("formatting the Kafka data directory " + dataDir
            + " took longer than " + START_TIMEOUT.toSeconds() + " s" + logTail());
      }
      if (format.exitValue() != 0) {
        throw new IllegalStateException("formatting the Kafka data directory " + dataDir
            + " failed with exit code " + format.exitValue() + logTail());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      format.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while formatting " + dataDir, e);
    }
  }

  private List<String> java(String heap) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of(heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-XX:MaxDirectMemorySize=64m", "-Djava.awt.headless=true",
        "-Dkafka.logs.dir=" + dataDir,
        // Its own file, so INFO: the startup and shutdown steps are worth having there.
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
        "-cp", absoluteClassPath()));
    return command;
  }

  /**
   * This JVM's class path with every entry made absolute: the broker runs in its data directory,
   * and {@code ./relaykit} starts the demo with a relative {@code examples/target/classes}.
   */
  static String absoluteClassPath() {
    StringBuilder out = new StringBuilder();
    for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      if (entry.isEmpty()) {
        continue;
      }
      if (out.length() > 0) {
        out.append(java.io.File.pathSeparatorChar);
      }
      out.append(Path.of(entry).toAbsolutePath().normalize());
    }
    return out.toString();
  }

  private Process startProcess(List<String> command) {
    ProcessBuilder b = new ProcessBuilder(command)
        .directory(dataDir.toFile())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    // A clock skew meant for a demo instance is not the broker's.
    b.environment().remove("LD_PRELOAD");
    b.environment().remove("FAKETIME");
    try {
      return b.start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start java for the Kafka broker", e);
    }
  }

  private void launchAndAwait() {
    if (!portFree(port)) {
      throw new IllegalStateException("cannot start the Kafka broker: port " + port + " on "
          + HOST + " is in use");
    }
    if (!portFree(controllerPort)) {
      // The controller's port is this node's own business (a static quorum of one, whose voter
      // endpoint is read from the config on every start), so a taken one is replaced.
      controllerPort = freePort();
      writeConfig();
    }
    long logStart = logSize();
    List<String> command = java("-Xmx320m");
    command.add("-Xms64m");
    command.addAll(List.of(BrokerMain.class.getName(), config.toString()));
    Process p = startProcess(command);
    process = p;
    // Its standard input is the broker's lifeline: kept open, never written, closed by our death.
    lifeline = p.getOutputStream();
    try {
      Files.writeString(pidFile, Long.toString(p.pid()));
    } catch (IOException e) {
      // only the orphan check needs it
    }
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    long pause = 20_000_000L;
    while (!KafkaPing.answers(HOST, port, Duration.ofSeconds(2))) {
      if (!p.isAlive()) {
        throw new IllegalStateException("the Kafka broker exited with code " + p.exitValue()
            + " before it answered on " + HOST + ":" + port + logTail(logStart));
      }
      if (System.nanoTime() - deadline >= 0) {
        killProcess();
        throw new IllegalStateException("the Kafka broker did not answer on " + HOST + ":" + port
            + " within " + START_TIMEOUT.toSeconds() + " s" + logTail(logStart));
      }
      LockSupport.parkNanos(pause);
      if (Thread.interrupted()) {
        killProcess();
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while the Kafka broker started");
      }
      pause = Math.min(pause * 2, 250_000_000L);
    }
  }

  private void killProcess() {
    if (process == null || !process.isAlive()) {
      closeLifeline();
      return;
    }
    process.destroyForcibly();
    awaitExit(Duration.ofSeconds(30), "SIGKILL");
    closeLifeline();
  }

  /** Only once the process has exited: closing it earlier would halt the broker. */
  private void closeLifeline() {
    if (lifeline != null) {
      try {
        lifeline.close();
      } catch (IOException e) {
        // the pipe's other end is gone with the process
      }
      lifeline = null;
    }
  }

  /**
   * SIGTERM, then waits up to {@link #STOP_TIMEOUT} for the controlled shutdown, then SIGKILL. An
   * interrupt does not cut the wait short (a shutdown hook's thread may arrive here interrupted,
   * and a broker killed mid-shutdown recovers its logs on the next start); it is kept for the
   * caller.
   */
  private void stopProcess() {
    if (process == null || !process.isAlive()) {
      closeLifeline();
      return;
    }
    // Through the handle: Process.destroy() also closes the broker's standard input, its
    // lifeline, and the broker would halt in the middle of its controlled shutdown.
    process.toHandle().destroy();
    boolean interrupted = Thread.interrupted();
    long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
    try {
      while (process.isAlive()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          process.waitFor(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (process.isAlive()) {
        killProcess();
      } else {
        closeLifeline();
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void awaitExit(Duration timeout, String signal) {
    boolean interrupted = false;
    long deadline = System.nanoTime() + timeout.toNanos();
    while (process.isAlive()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new IllegalStateException("the Kafka broker (pid " + process.pid()
            + ") did not exit within " + timeout.toSeconds() + " s of " + signal);
      }
      try {
        process.waitFor(left, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private long logSize() {
    try {
      return Files.exists(log) ? Files.size(log) : 0;
    } catch (IOException e) {
      return 0;
    }
  }

  private String logTail() {
    return logTail(0);
  }

  /**
   * For a failure message: {@code " (log: FILE)"}, then on the next lines what the broker logged
   * since {@code from} (its last 4 000 characters). The first line alone stays a summary.
   */
  private String logTail(long from) {
    try {
      byte[] all = Files.readAllBytes(log);
      int start = (int) Math.max(from, all.length - 4_000L);
      String text = new String(all, start, all.length - start, StandardCharsets.UTF_8);
      return " (log: " + log + ")\n" + text;
    } catch (IOException | RuntimeException e) {
      return " (log: " + log + ")";
    }
  }
}

package io.relaykit.storage.redis;

import static org.junit.jupiter.api.Assertions.fail;

import io.relaykit.tck.Await;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Redis Cluster of three masters (no replicas) from the machine's {@code redis-server}, as
 * child processes on free loopback ports (each port and its cluster bus port, port + 10000) in a
 * temporary directory, without persistence; the slots are assigned with {@code redis-cli --cluster
 * create}. Never touches the shared server on 6379. {@link #close} kills the processes ({@code
 * destroyForcibly}) and deletes the directory.
 */
final class RedisClusterProcess implements AutoCloseable {

  static final int MASTERS = 3;

  private final Path dir;
  private final List<Integer> ports = new ArrayList<>();
  private final List<Process> processes = new ArrayList<>();

  private RedisClusterProcess() throws IOException {
    this.dir = Files.createTempDirectory("relaykit-redis-cluster-");
  }

  /** Starts three masters, joins them into one cluster and waits until it reports ok. */
  static RedisClusterProcess start() throws IOException, InterruptedException {
    RedisClusterProcess c = new RedisClusterProcess();
    try {
      c.startNodes();
      c.createCluster();
      for (int port : c.ports) {
        Await.until(Duration.ofSeconds(60), "cluster_state:ok on node " + port,
            () -> c.clusterInfo(port).contains("cluster_state:ok"));
      }
      return c;
    } catch (IOException | InterruptedException | RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  /** The nodes' URIs, comma-separated: the seed list for {@code RedisStorageConfig.cluster}. */
  String seeds() {
    List<String> uris = new ArrayList<>();
    for (int port : ports) {
      uris.add("redis://127.0.0.1:" + port);
    }
    return String.join(",", uris);
  }

  List<Integer> ports() {
    return List.copyOf(ports);
  }

  /** Kills the master on {@code port} at once, as {@code kill -9} would. */
  void kill(int port) throws InterruptedException {
    Process p = processes.get(ports.indexOf(port));
    p.destroyForcibly();
    if (!p.waitFor(10, TimeUnit.SECONDS)) {
      fail("redis-server on port " + port + " did not die within 10 s");
    }
  }

  /** The number of keys node {@code port} holds. */
  long keysOn(int port) throws IOException {
    String reply = command(port, "DBSIZE");
    if (!reply.startsWith(":")) {
      throw new IOException("DBSIZE on " + port + " answered " + reply);
    }
    return Long.parseLong(reply.substring(1));
  }

  private void startNodes() throws IOException {
    for (int i = 0; i < MASTERS; i++) {
      int port = freePortPair();
      Path nodeDir = Files.createDirectories(dir.resolve("node-" + port));
      List<String> command = List.of("redis-server", "--port", Integer.toString(port),
          "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
          "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
          "--cluster-node-timeout", "5000", "--dir", nodeDir.toString(),
          "--logfile", nodeDir.resolve("redis.log").toString());
      try {
        processes.add(new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
      } catch (IOException e) {
        fail("could not start redis-server (" + e.getMessage() + "): install it (apt-get install "
            + "redis-server) so it is on the PATH", e);
      }
      ports.add(port);
    }
    for (int port : ports) {
      Await.until(Duration.ofSeconds(20), "redis-server on port " + port + " to answer PING",
          () -> answersPing(port));
    }
  }

  private void createCluster() throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
    for (int port : ports) {
      command.add("127.0.0.1:" + port);
    }
    command.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
    Path log = dir.resolve("cluster-create.log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("redis-cli --cluster create did not finish within 60 s: " + Files.readString(log));
    }
    if (p.exitValue() != 0) {
      fail("redis-cli --cluster create failed (" + p.exitValue() + "): " + Files.readString(log));
    }
  }

  /** A port whose cluster bus port (port + 10000) is free as well. */
  private static int freePortPair() throws IOException {
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = ThreadLocalRandom.current().nextInt(20_000, 40_000);
      if (port == 6379 || !free(port) || !free(port + 10_000)) {
        continue;
      }
      return port;
    }
    throw new IOException("no free port pair (p, p + 10000) found in 200 attempts");
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort() == port;
    } catch (IOException e) {
      return false;
    }
  }

  private String clusterInfo(int port) {
    try {
      return bulk(port, "CLUSTER INFO");
    } catch (IOException e) {
      return "";
    }
  }

  private static boolean answersPing(int port) {
    try {
      return "+PONG".equals(command(port, "PING"));
    } catch (IOException e) {
      return false;
    }
  }

  /** One inline command; returns the first reply line. */
  private static String command(int port, String inline) throws IOException {
    try (Socket socket = open(port)) {
      send(socket, inline);
      return readLine(socket.getInputStream());
    }
  }

  /** One inline command whose reply is a bulk string; returns its content. */
  private static String bulk(int port, String inline) throws IOException {
    try (Socket socket = open(port)) {
      send(socket, inline);
      InputStream in = socket.getInputStream();
      String header = readLine(in);
      if (!header.startsWith("$")) {
        return header;
      }
      int length = Integer.parseInt(header.substring(1));
      byte[] body = in.readNBytes(length);
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  private static Socket open(int port) throws IOException {
    Socket socket = new Socket();
    socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
    socket.setSoTimeout(5000);
    return socket;
  }

  private static void send(Socket socket, String inline) throws IOException {
    OutputStream out = socket.getOutputStream();
    out.write((inline + "\r\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    int c;
    while ((c = in.read()) != -1 && c != '\n') {
      if (c != '\r') {
        line.append((char) c);
      }
    }
    return line.toString();
  }

  @Override
  public void close() throws IOException, InterruptedException {
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (Process p : processes) {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        fail("a redis-server of the test cluster did not die within 10 s");
      }
    }
    processes.clear();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(f);
      }
    }
  }
}

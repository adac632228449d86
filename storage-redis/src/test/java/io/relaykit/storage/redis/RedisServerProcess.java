package io.relaykit.storage.redis;

import static org.junit.jupiter.api.Assertions.fail;

import io.relaykit.tck.Await;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} child process on a free loopback port, without persistence, that a
 * test can kill ({@code destroyForcibly}, like {@code kill -9}) and start again on the same port.
 */
final class RedisServerProcess implements AutoCloseable {
  private final int port;
  private final Path dir;
  private Process process;

  RedisServerProcess() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      this.port = s.getLocalPort();
    }
    this.dir = Files.createTempDirectory("relaykit-redis-");
  }

  int port() {
    return port;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Starts the server and waits until it answers PING. */
  RedisServerProcess start() throws IOException {
    List<String> command = List.of("redis-server", "--port", Integer.toString(port),
        "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
        "--logfile", dir.resolve("redis.log").toString());
    try {
      process = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    } catch (IOException e) {
      fail("could not start redis-server (" + e.getMessage() + "): install it (apt-get install "
          + "redis-server) so it is on the PATH", e);
    }
    Await.until(Duration.ofSeconds(10), "redis-server on port " + port + " to answer PING",
        this::answersPing);
    return this;
  }

  /** Kills the server at once, as {@code kill -9} would, and waits for it to be gone. */
  void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        fail("redis-server on port " + port + " did not die within 10 s");
      }
      process = null;
    }
  }

  boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** One inline command over a plain socket, independent of Lettuce; returns the first reply line. */
  String command(String inline) throws IOException {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      socket.setSoTimeout(5000);
      OutputStream out = socket.getOutputStream();
      out.write((inline + "\r\n").getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = socket.getInputStream();
      StringBuilder line = new StringBuilder();
      int c;
      while ((c = in.read()) != -1 && c != '\n') {
        if (c != '\r') {
          line.append((char) c);
        }
      }
      return line.toString();
    }
  }

  private boolean answersPing() {
    try {
      return "+PONG".equals(command("PING"));
    } catch (IOException e) {
      return false;
    }
  }

  @Override
  public void close() throws Exception {
    kill();
    try (var files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Files.deleteIfExists(p);
      }
    }
    Files.deleteIfExists(dir);
  }
}

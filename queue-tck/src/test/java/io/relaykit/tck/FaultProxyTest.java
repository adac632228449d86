package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** FaultProxy against a real echo server on loopback. */
class FaultProxyTest {

  private EchoServer echo;
  private FaultProxy proxy;

  @BeforeEach
  void start() throws IOException {
    echo = new EchoServer();
    proxy = FaultProxy.to("127.0.0.1", echo.port());
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    echo.close();
  }

  @Test
  @DisplayName("bytes go through both ways, and are counted")
  void forwards() throws IOException {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "hello")).isEqualTo("hello");
    }
    // A pump counts a chunk after writing it, so the echo can arrive before the count.
    Await.until(Duration.ofSeconds(5), "5 bytes counted each way",
        () -> proxy.bytesToServer() == 5 && proxy.bytesToClients() == 5);
    assertThat(proxy.acceptedConnections()).isEqualTo(1);
  }

  @Test
  @DisplayName("a cut resets open connections; new ones are accepted")
  void cut() throws IOException {
    Socket s = connect();
    assertThat(roundTrip(s, "a")).isEqualTo("a");
    proxy.cutConnections();
    Await.until(Duration.ofSeconds(5), "the link to close", () -> proxy.openConnections() == 0);
    assertThatThrownBy(() -> {
      for (int i = 0; i < 100; i++) {
        roundTrip(s, "b");
      }
    }).isInstanceOf(IOException.class);
    s.close();
    try (Socket again = connect()) {
      assertThat(roundTrip(again, "c")).isEqualTo("c");
    }
  }

  @Test
  @DisplayName("refused connections are refused until heal, on the same port")
  void refuse() throws IOException {
    proxy.refuseConnections();
    assertThatThrownBy(this::connectNotToItself).isInstanceOf(ConnectException.class);
    proxy.heal();
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "back")).isEqualTo("back");
    }
  }

  @Test
  @DisplayName("a blackhole accepts and never answers; heal resets the connections it broke")
  void blackhole() throws IOException {
    proxy.blackhole();
    try (Socket s = connect()) {
      s.setSoTimeout(300);
      s.getOutputStream().write("lost".getBytes(StandardCharsets.UTF_8));
      assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
      proxy.heal();
      Await.until(Duration.ofSeconds(5), "the broken link to be reset",
          () -> proxy.openConnections() == 0);
    }
    assertThat(echo.received()).isZero();
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "ok")).isEqualTo("ok");
    }
  }

  @Test
  @DisplayName("dropped replies: the request reaches the server, the answer never comes back")
  void dropReplies() throws IOException {
    proxy.dropReplies();
    try (Socket s = connect()) {
      s.setSoTimeout(300);
      s.getOutputStream().write("commit".getBytes(StandardCharsets.UTF_8));
      Await.until(Duration.ofSeconds(5), "the server to get the request",
          () -> echo.received() == 6);
      assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
    }
  }

  @Test
  @DisplayName("stopped reading blocks a writer once buffers fill; heal lets it finish, nothing lost")
  void stopReading() throws Exception {
    proxy.stopReading();
    byte[] big = new byte[32 * 1024 * 1024];
    // The writer and the reader need a thread each: the echo's replies fill the client's receive
    // buffer unless someone drains it, so a writer running before the reader on one thread never
    // finishes. The common pool cannot promise that (parallelism 1 on a 2-core machine; JDK 25
    // runs async tasks there instead of a thread per task), so they get their own.
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (Socket s = connect()) {
      CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
        try {
          s.getOutputStream().write(big);
          s.getOutputStream().flush();
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }, threads);
      CompletableFuture<Long> reader =
          CompletableFuture.supplyAsync(() -> drain(s, big.length), threads);
      Await.holds(Duration.ofMillis(500), "the writer stays blocked", () -> !writer.isDone());
      assertThat(echo.received()).isLessThan(big.length);
      proxy.heal();
      writer.get(30, TimeUnit.SECONDS);
      assertThat(reader.get(30, TimeUnit.SECONDS)).isEqualTo(big.length);
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  @DisplayName("latency delays each answer by at least the configured time")
  void latency() throws IOException {
    proxy.latency(Duration.ofMillis(200));
    try (Socket s = connect()) {
      long start = System.nanoTime();
      assertThat(roundTrip(s, "slow")).isEqualTo("slow");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(
          Duration.ofMillis(400));
    }
  }

  @Test
  @DisplayName("bad arguments name the field and the value")
  void badInput() {
    assertThatThrownBy(() -> FaultProxy.to(" ", 1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("host");
    assertThatThrownBy(() -> FaultProxy.to("127.0.0.1", 70_000))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("70000");
    assertThatThrownBy(() -> proxy.latency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("latency");
  }

  /**
   * Connects to the proxy's port, which nothing listens on now. The port came from the ephemeral
   * range, so Linux may give the connecting socket that very port as its local one and join it
   * to itself (a TCP self-connect, which "succeeds"): such a socket proves nothing about the
   * proxy and is closed and tried again.
   */
  private Socket connectNotToItself() throws IOException {
    for (int attempt = 0; attempt < 20; attempt++) {
      Socket s = connect();
      if (s.getLocalPort() != s.getPort()) {
        return s;
      }
      s.close();
    }
    throw new AssertionError("every connect to port " + proxy.port() + " joined itself");
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
    s.setSoTimeout(10_000);
    return s;
  }

  private static String roundTrip(Socket s, String text) throws IOException {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    s.getOutputStream().write(bytes);
    s.getOutputStream().flush();
    byte[] back = s.getInputStream().readNBytes(bytes.length);
    if (back.length < bytes.length) {
      throw new IOException("connection ended after " + back.length + " bytes");
    }
    return new String(back, StandardCharsets.UTF_8);
  }

  private static long drain(Socket s, long expected) {
    long n = 0;
    byte[] buffer = new byte[64 * 1024];
    try {
      InputStream in = s.getInputStream();
      while (n < expected) {
        int r = in.read(buffer);
        if (r < 0) {
          break;
        }
        n += r;
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return n;
  }

  /** Echoes every byte back; counts what it received. */
  private static final class EchoServer implements AutoCloseable {
    private final ServerSocket socket;
    private final AtomicLong received = new AtomicLong();

    EchoServer() throws IOException {
      socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      Thread t = new Thread(this::accept, "echo-accept");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    long received() {
      return received.get();
    }

    private void accept() {
      while (true) {
        Socket s;
        try {
          s = socket.accept();
        } catch (IOException e) {
          return;
        }
        Thread t = new Thread(() -> echo(s), "echo");
        t.setDaemon(true);
        t.start();
      }
    }

    private void echo(Socket s) {
      byte[] buffer = new byte[64 * 1024];
      try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          received.addAndGet(n);
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // the client went away
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}

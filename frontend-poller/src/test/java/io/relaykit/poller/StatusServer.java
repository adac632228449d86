package io.relaykit.poller;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP server answering status polls from a script; records what it saw.
 *
 * <ul>
 *   <li>{@code GET /jobs/1/status}: the next scripted reply (the last one repeats).
 *   <li>{@code POST /jobs}: {@code 202 Accepted}, {@code Location: /jobs/1/status} and the
 *       {@code Retry-After} set by {@link #submitRetryAfter}, if any.
 *   <li>Any path given to {@link #serve}: fixed content (a page, a script) on the same origin.
 * </ul>
 * With {@link #holdReplies()}, each status request waits until the test {@link #release}s it, so a
 * test can look at the client while a request is in flight.
 */
final class StatusServer implements AutoCloseable {

  record Reply(int status, Map<String, String> headers, String body) {}

  private final HttpServer server;
  private final ExecutorService handlers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "status-server");
    t.setDaemon(true);
    return t;
  });
  private final Deque<Reply> script = new ArrayDeque<>();
  private final Map<String, String> submitHeaders = new LinkedHashMap<>();
  private final Semaphore released = new Semaphore(0);
  private volatile boolean holding;
  private Reply last;
  final AtomicInteger requests = new AtomicInteger();
  final AtomicInteger concurrent = new AtomicInteger();
  final AtomicInteger maxConcurrent = new AtomicInteger();
  /** Status requests that arrived and are held, waiting for {@link #release}. */
  final AtomicInteger held = new AtomicInteger();

  StatusServer() {
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // Held requests must not block the others (the page, a concurrent request a bug would send).
    server.setExecutor(handlers);
    server.createContext("/jobs/1/status", exchange -> {
      int now = concurrent.incrementAndGet();
      maxConcurrent.accumulateAndGet(now, Math::max);
      requests.incrementAndGet();
      try {
        if (holding) {
          held.incrementAndGet();
          try {
            if (!released.tryAcquire(30, TimeUnit.SECONDS)) {
              throw new IOException("held status request was never released");
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while held", e);
          } finally {
            held.decrementAndGet();
          }
        }
        Reply reply;
        synchronized (this) {
          reply = script.isEmpty() ? last : script.removeFirst();
          last = reply;
        }
        send(exchange, reply.status(), reply.headers(), reply.body());
      } finally {
        concurrent.decrementAndGet();
      }
    });
    server.createContext("/jobs", exchange -> {
      if (!"POST".equals(exchange.getRequestMethod()) || !"/jobs".equals(
          exchange.getRequestURI().getPath())) {
        send(exchange, 404, Map.of(), "");
        return;
      }
      Map<String, String> headers = new LinkedHashMap<>();
      headers.put("Content-Type", "application/json");
      headers.put("Location", "/jobs/1/status");
      synchronized (this) {
        headers.putAll(submitHeaders);
      }
      send(exchange, 202, headers, "{\"jobId\":\"1\",\"status\":\"PENDING\"}");
    });
    server.start();
  }

  private static void send(HttpExchange exchange, int status, Map<String, String> headers,
      String text) throws IOException {
    byte[] body = text.getBytes(StandardCharsets.UTF_8);
    headers.forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
    exchange.getResponseHeaders().add("Cache-Control", "no-store");
    exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }

  synchronized StatusServer then(int status, String body, Map<String, String> headers) {
    script.addLast(new Reply(status, headers, body));
    return this;
  }

  StatusServer then(String jobStatus) {
    return then(200, "{\"jobId\":\"1\",\"status\":\"" + jobStatus + "\"}", Map.of());
  }

  /** The {@code Retry-After} value {@code POST /jobs} answers with. */
  synchronized StatusServer submitRetryAfter(String value) {
    submitHeaders.put("Retry-After", value);
    return this;
  }

  /** Serves {@code body} at {@code path} with {@code contentType}. */
  StatusServer serve(String path, String contentType, byte[] body) {
    server.createContext(path, exchange -> {
      exchange.getResponseHeaders().add("Content-Type", contentType);
      exchange.getResponseHeaders().add("Cache-Control", "no-store");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    return this;
  }

  /** From now on, each status request waits for a {@link #release}. */
  StatusServer holdReplies() {
    holding = true;
    return this;
  }

  /** Lets one held (or the next) status request answer. */
  void release() {
    released.release();
  }

  URI url() {
    return base().resolve("/jobs/1/status");
  }

  URI submitUrl() {
    return base().resolve("/jobs");
  }

  URI base() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
  }

  @Override
  public void close() {
    holding = false;
    released.release(1000);
    server.stop(0);
    handlers.shutdownNow();
  }
}

package io.relaykit.poller;

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
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** A loopback HTTP server answering status polls from a script; records what it saw. */
final class StatusServer implements AutoCloseable {

  record Reply(int status, Map<String, String> headers, String body) {}

  private final HttpServer server;
  private final Deque<Reply> script = new ArrayDeque<>();
  private Reply last;
  final AtomicInteger requests = new AtomicInteger();
  final AtomicInteger concurrent = new AtomicInteger();
  final AtomicInteger maxConcurrent = new AtomicInteger();

  StatusServer() {
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext("/jobs/1/status", exchange -> {
      int now = concurrent.incrementAndGet();
      maxConcurrent.accumulateAndGet(now, Math::max);
      requests.incrementAndGet();
      Reply reply;
      synchronized (this) {
        reply = script.isEmpty() ? last : script.removeFirst();
        last = reply;
      }
      byte[] body = reply.body().getBytes(StandardCharsets.UTF_8);
      reply.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
      exchange.sendResponseHeaders(reply.status(), body.length == 0 ? -1 : body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
      concurrent.decrementAndGet();
    });
    server.start();
  }

  synchronized StatusServer then(int status, String body, Map<String, String> headers) {
    script.addLast(new Reply(status, headers, body));
    return this;
  }

  StatusServer then(String jobStatus) {
    return then(200, "{\"jobId\":\"1\",\"status\":\"" + jobStatus + "\"}", Map.of());
  }

  URI url() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/jobs/1/status");
  }

  @Override
  public void close() {
    server.stop(0);
  }
}

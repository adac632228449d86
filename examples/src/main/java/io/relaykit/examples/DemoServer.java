package io.relaykit.examples;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.idempotency.Claim;
import io.relaykit.poller.HttpAnswer;
import io.relaykit.poller.PollerAssets;
import io.relaykit.poller.StatusDocument;
import io.relaykit.poller.StatusResponses;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The demo's HTTP API on the JDK's built-in server, bound to loopback by default.
 *
 * <pre>
 *   POST /orders                      202 + Location + Retry-After; Idempotency-Key required
 *   GET  /orders/{id}/status          PENDING | PROCESSING | SUCCESS | FAILED (+ error)
 *   GET  /orders/{id}                 the order and its effect counts
 *   GET  /metrics                     backlog, oldest age, dead letters, drops, verdict
 *   GET  /dead-letters                the newest dead letters
 *   POST /dead-letters/{id}/replay    back into the outbox (replaying twice resends once)
 *   GET  /api/history                 the status history's samples (JSON)
 *   GET  /api/history.svg             the status page's chart of them (SVG)
 *   GET  /                            the status page
 * </pre>
 */
final class DemoServer implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(DemoServer.class.getName());
  private static final Pattern ORDER = Pattern.compile("/orders/([A-Za-z0-9-]{1,64})(/status)?");
  private static final Pattern REPLAY = Pattern.compile("/dead-letters/([^/]{1,2048})/replay");
  private static final Duration RETRY_AFTER = Duration.ofSeconds(1);
  private static final int MAX_BODY = 16 * 1024;
  private static final int MAX_KEY = 200;
  private static final Set<String> ORDER_FIELDS = Set.of("sku", "qty");

  private final CheckoutApp app;
  private final HttpServer server;
  private final ExecutorService executor;
  private final StatusResponses responses = new StatusResponses("orderId");

  DemoServer(CheckoutApp app, String host, int port) throws IOException {
    this.app = app;
    this.server = HttpServer.create(new InetSocketAddress(host, port), 64);
    this.executor = Executors.newFixedThreadPool(16, r -> {
      Thread t = new Thread(r, "demo-http");
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(executor);
    server.createContext("/", this::route);
    server.start();
  }

  int port() {
    return server.getAddress().getPort();
  }

  private void route(HttpExchange ex) throws IOException {
    try {
      String path = ex.getRequestURI().getPath();
      String method = ex.getRequestMethod();
      Matcher order = ORDER.matcher(path);
      Matcher replay = REPLAY.matcher(path);
      if (path.equals("/") || path.equals("/index.html")) {
        requireMethod(method, "GET");
        sendBytes(ex, 200, "text/html; charset=utf-8", page());
      } else if (path.equals("/static/relaykit-poller.js")) {
        requireMethod(method, "GET");
        sendBytes(ex, 200, PollerAssets.JAVASCRIPT, PollerAssets.browserPollerScript());
      } else if (path.equals("/orders")) {
        requireMethod(method, "POST");
        // The SERVER span the order's trace starts with: the outbox append inside it captures it.
        Span span = app.tracing.server(method, path, ex.getRequestHeaders());
        Scope current = span.makeCurrent();
        try {
          HttpAnswer answer = placeOrder(ex);
          DemoTracing.answered(span, answer.status());
          send(ex, answer);
        } catch (HttpError e) {
          DemoTracing.answered(span, e.status);
          throw e;
        } catch (Exception | Error e) {
          DemoTracing.answered(span, 500);
          span.recordException(e);
          throw e;
        } finally {
          current.close();
          span.end();
        }
      } else if (order.matches()) {
        requireMethod(method, "GET");
        send(ex, order.group(2) != null ? status(order.group(1)) : order(order.group(1)));
      } else if (path.equals("/metrics")) {
        requireMethod(method, "GET");
        send(ex, json(200, Json.MAPPER.valueToTree(app.metrics())));
      } else if (path.equals("/dead-letters")) {
        requireMethod(method, "GET");
        send(ex, deadLetters());
      } else if (replay.matches()) {
        requireMethod(method, "POST");
        send(ex, replay(replay.group(1)));
      } else if (path.equals("/api/history") || path.equals("/api/history.svg")) {
        requireMethod(method, "GET");
        send(ex, history(path.endsWith(".svg")));
      } else {
        send(ex, responses.error(404, "no such resource: " + path));
      }
    } catch (HttpError e) {
      send(ex, responses.error(e.status, e.getMessage()));
    } catch (Exception e) {
      LOG.log(System.Logger.Level.ERROR, "request failed: " + ex.getRequestURI(), e);
      send(ex, responses.error(500, "internal error: " + e.getClass().getSimpleName()));
    } finally {
      ex.close();
    }
  }

  private HttpAnswer placeOrder(HttpExchange ex) throws Exception {
    String key = ex.getRequestHeaders().getFirst("Idempotency-Key");
    if (key == null || key.isBlank()) {
      throw new HttpError(400, "the Idempotency-Key header is required");
    }
    if (key.length() > MAX_KEY) {
      throw new HttpError(400, "the Idempotency-Key header must be at most " + MAX_KEY
          + " characters");
    }
    JsonNode body = readJson(ex);
    String sku = textField(body, "sku");
    if (sku.isBlank() || sku.length() > 64) {
      throw new HttpError(400, "sku must be 1 to 64 characters");
    }
    JsonNode qtyNode = body.get("qty");
    if (qtyNode == null || !qtyNode.isIntegralNumber() || !qtyNode.canConvertToInt()) {
      throw new HttpError(400, "qty must be a whole number");
    }
    int qty = qtyNode.intValue();
    if (qty <= 0 || qty > 1000) {
      throw new HttpError(400, "qty must be between 1 and 1000, was " + qty);
    }
    String hash = Orders.requestHash(sku, qty);

    Optional<Orders.Order> existing = app.orders.findByIdempotencyKey(key);
    if (existing.isPresent()) {
      return repeat(existing.get(), hash);
    }
    Claim claim = app.storage.idempotencyStore().claim("http:" + key, app.options.lease());
    switch (claim.status()) {
      case IN_PROGRESS:
        throw new HttpError(409, "a request with this Idempotency-Key is still in progress");
      case DONE:
        return repeat(app.orders.findByIdempotencyKey(key).orElseThrow(
            () -> new IllegalStateException("key " + key + " is done but has no order")), hash);
      default:
        break;
    }
    try {
      Optional<Orders.Order> placed = app.orders.place(sku, qty, key, hash);
      app.storage.idempotencyStore().complete(claim);
      if (placed.isEmpty()) {
        return repeat(app.orders.findByIdempotencyKey(key).orElseThrow(), hash);
      }
      return accepted(placed.get().id());
    } catch (Exception e) {
      app.storage.idempotencyStore().release(claim);
      throw e;
    }
  }

  /** The first response again, or 422 if the key was used for a different request. */
  private HttpAnswer repeat(Orders.Order order, String hash) {
    if (!order.requestHash().equals(hash)) {
      throw new HttpError(422, "this Idempotency-Key was used for a different request");
    }
    return accepted(order.id());
  }

  private HttpAnswer accepted(String orderId) {
    return responses.accepted(orderId, URI.create("/orders/" + orderId + "/status"), RETRY_AFTER);
  }

  private HttpAnswer status(String id) throws Exception {
    Orders.Order order = app.orders.find(id)
        .orElseThrow(() -> new HttpError(404, "no order " + id));
    return responses.status(app.orders.status(order), RETRY_AFTER);
  }

  private HttpAnswer order(String id) throws Exception {
    Orders.Order order = app.orders.find(id)
        .orElseThrow(() -> new HttpError(404, "no order " + id));
    StatusDocument status = app.orders.status(order);
    ObjectNode node = Json.MAPPER.createObjectNode();
    node.put("orderId", order.id());
    node.put("sku", order.sku());
    node.put("qty", order.qty());
    node.put("createdAt", order.createdAt().toString());
    node.put("status", status.status().name());
    if (status.error() != null) {
      node.put("error", status.error());
    }
    ObjectNode effects = node.putObject("effects");
    for (Orders.Effect effect : Orders.Effect.values()) {
      effects.put(effect.id(), app.orders.effectCount(order.id(), effect));
    }
    return json(200, node);
  }

  private HttpAnswer deadLetters() {
    ArrayNode list = Json.MAPPER.createArrayNode();
    for (DeadLetter d : app.deadLetters(100)) {
      list.add(deadLetterJson(d));
    }
    return json(200, list);
  }

  static ObjectNode deadLetterJson(DeadLetter d) {
    ObjectNode n = Json.MAPPER.createObjectNode();
    n.put("id", d.id());
    n.put("messageId", d.messageId());
    n.put("orderId", d.message().key().orElse(null));
    n.put("source", d.source());
    n.put("group", d.group());
    n.put("reason", d.reason());
    n.put("exception", d.exceptionClass());
    n.put("attempts", d.attempts());
    n.put("firstFailureAt", d.firstFailureAt().toString());
    n.put("lastFailureAt", d.lastFailureAt().toString());
    n.put("traceId", d.message().traceId());
    return n;
  }

  private HttpAnswer replay(String id) {
    Optional<DeadLetter> replayed = app.replay(id);
    if (replayed.isEmpty()) {
      throw new HttpError(404, "no dead letter " + id + " (already replayed or purged)");
    }
    ObjectNode n = Json.MAPPER.createObjectNode();
    n.put("replayed", id);
    return json(200, n);
  }

  /** The status history as JSON, or as the page's SVG chart. */
  private HttpAnswer history(boolean svg) {
    if (svg) {
      return new HttpAnswer(200, Map.of("Content-Type", "image/svg+xml; charset=utf-8",
          "Cache-Control", "no-store"), app.history.svg());
    }
    return json(200, Json.MAPPER.valueToTree(app.history.json(app.samplePeriod)));
  }

  private static JsonNode readJson(HttpExchange ex) throws IOException {
    byte[] bytes;
    try (InputStream in = ex.getRequestBody()) {
      bytes = in.readNBytes(MAX_BODY + 1);
    }
    if (bytes.length > MAX_BODY) {
      throw new HttpError(413, "request body must be at most " + MAX_BODY + " bytes");
    }
    JsonNode body;
    try {
      body = Json.MAPPER.readTree(bytes);
    } catch (JsonProcessingException e) {
      throw new HttpError(400, "malformed JSON: " + e.getOriginalMessage());
    }
    if (body == null || !body.isObject()) {
      throw new HttpError(400, "the body must be a JSON object {\"sku\": ..., \"qty\": ...}");
    }
    for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
      String field = it.next();
      if (!ORDER_FIELDS.contains(field)) {
        throw new HttpError(400, "unknown field \"" + field + "\"; known: sku, qty");
      }
    }
    return body;
  }

  private static String textField(JsonNode body, String name) {
    JsonNode node = body.get(name);
    if (node == null || !node.isTextual()) {
      throw new HttpError(400, name + " must be a string");
    }
    return node.asText();
  }

  private static void requireMethod(String actual, String expected) {
    if (!actual.equals(expected)) {
      throw new HttpError(405, "method " + actual + " not allowed; use " + expected);
    }
  }

  private HttpAnswer json(int status, JsonNode body) {
    return new HttpAnswer(status, Map.of("Content-Type", "application/json; charset=utf-8",
        "Cache-Control", "no-store"), body.toString());
  }

  private static void send(HttpExchange ex, HttpAnswer answer) throws IOException {
    answer.headers().forEach((k, v) -> ex.getResponseHeaders().set(k, v));
    byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(answer.status(), body.length == 0 ? -1 : body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  private static void sendBytes(HttpExchange ex, int status, String type, byte[] body)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", type);
    ex.getResponseHeaders().set("Cache-Control", "no-store");
    ex.sendResponseHeaders(status, body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  private static byte[] page() throws IOException {
    try (InputStream in = DemoServer.class.getResourceAsStream("index.html")) {
      if (in == null) {
        throw new IOException("index.html is missing from the jar");
      }
      return in.readAllBytes();
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** An answer with a 4xx status and a message for the client. */
  static final class HttpError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;

    HttpError(int status, String message) {
      super(message);
      this.status = status;
    }
  }
}

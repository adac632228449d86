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
import io.relaykit.idempotency.IdempotencyKeyException;
import io.relaykit.idempotency.IdempotencyKeyProtocol;
import io.relaykit.idempotency.IdempotentAnswer;
import io.relaykit.idempotency.IdempotentAnswerStore;
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
import java.util.List;
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
 *   GET  /metrics/prometheus          relaykit's Micrometer meters, Prometheus text format
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
  private final IdempotencyKeyProtocol idempotency;

  DemoServer(CheckoutApp app, String host, int port) throws IOException {
    this.app = app;
    this.idempotency = IdempotencyKeyProtocol.builder(app.storage.idempotencyStore(),
        new OrderAnswers()).lease(app.options.lease()).maxKeyLength(MAX_KEY).build();
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
      } else if (path.equals("/metrics/prometheus")) {
        requireMethod(method, "GET");
        CheckoutApp.Scrape scrape = app.scrapePrometheus(ex.getRequestHeaders().getFirst("Accept"));
        send(ex, new HttpAnswer(200, Map.of("Content-Type", scrape.contentType(),
            "Cache-Control", "no-store"), scrape.body()));
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
    String key;
    try {
      key = idempotency.parseKey(ex.getRequestHeaders().getFirst(IdempotencyKeyProtocol.HEADER));
    } catch (IdempotencyKeyException e) {
      throw new HttpError(e.status(), e.getMessage());
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
    // The demo's fingerprint is semantic: the same sku and qty is the same request.
    String hash = Orders.requestHash(sku, qty);

    IdempotencyKeyProtocol.Decision decision = idempotency.begin(key, hash);
    if (!(decision instanceof IdempotencyKeyProtocol.Proceed owned)) {
      return answerOf(decision);
    }
    Optional<Orders.Order> placed;
    try {
      placed = app.orders.place(sku, qty, key, hash);
    } catch (Exception | Error e) {
      idempotency.abandon(owned);
      throw e;
    }
    // The order row is the kept answer (OrderAnswers.save keeps nothing); this completes the key.
    idempotency.finish(owned, 202, Map.of(), new byte[0]);
    if (placed.isEmpty()) {
      // The key's order was placed meanwhile (after a takeover): answer as a repeat.
      return answerOf(idempotency.answered(key, hash).orElseThrow(
          () -> new IllegalStateException("key " + key + " is taken but has no order")));
    }
    return accepted(placed.get().id());
  }

  /** A replay as the demo's answer, a refusal as its error. */
  private static HttpAnswer answerOf(IdempotencyKeyProtocol.Decision decision) {
    if (decision instanceof IdempotencyKeyProtocol.Refuse r) {
      throw new HttpError(r.status(), r.message());
    }
    IdempotentAnswer a = ((IdempotencyKeyProtocol.Replay) decision).answer();
    Map<String, String> headers = new java.util.LinkedHashMap<>();
    a.headers().forEach((name, values) -> headers.put(name, values.get(0)));
    return new HttpAnswer(a.status(), headers, new String(a.body(), StandardCharsets.UTF_8));
  }

  /**
   * The demo's first answers are its orders: an order placed with a key answers 202 with its
   * status URL, and its request hash is the fingerprint. Nothing else is saved, because {@link
   * Orders#place} commits the order (with key and hash) before the key is completed.
   */
  private final class OrderAnswers implements IdempotentAnswerStore {
    @Override
    public Optional<IdempotentAnswer> find(String key) {
      Optional<Orders.Order> order;
      try {
        order = app.orders.findByIdempotencyKey(key);
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException("reading the order of an Idempotency-Key failed", e);
      }
      return order.map(o -> {
        HttpAnswer a = accepted(o.id());
        Map<String, List<String>> headers = new java.util.LinkedHashMap<>();
        a.headers().forEach((name, value) -> headers.put(name, List.of(value)));
        return IdempotentAnswer.of(o.requestHash(), a.status(), headers,
            a.body().getBytes(StandardCharsets.UTF_8));
      });
    }

    @Override
    public void save(String key, IdempotentAnswer answer) {
      // The order row, committed by Orders.place, is the answer.
    }
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

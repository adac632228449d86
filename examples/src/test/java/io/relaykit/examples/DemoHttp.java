package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** A small java.net.http client for the demo's API, for tests. */
final class DemoHttp {
  /** A response: status, headers, body text and its JSON (null when the body is not JSON). */
  record Answer(int status, HttpResponse<String> raw, JsonNode json) {
    String header(String name) {
      return raw.headers().firstValue(name).orElse(null);
    }
  }

  private final HttpClient client = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();
  final URI base;

  DemoHttp(URI base) {
    this.base = base;
  }

  Answer get(String path) throws IOException {
    return send(HttpRequest.newBuilder(base.resolve(path)).GET());
  }

  Answer post(String path, String key, String body) throws IOException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return send(b);
  }

  Answer order(String key, String sku, int qty) throws IOException {
    return post("/orders", key, "{\"sku\":\"" + sku + "\",\"qty\":" + qty + "}");
  }

  /**
   * Places {@code n} orders of SKUs {@code skuPrefix-0 .. skuPrefix-(n-1)}, each under a fresh
   * Idempotency-Key; fails unless each is accepted (202). Returns the order ids in order.
   */
  List<String> placeOrders(String skuPrefix, int n) throws IOException {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Answer a = order(newKey(), skuPrefix + "-" + i, 1);
      assertThat(a.status()).as("order %s-%d accepted", skuPrefix, i).isEqualTo(202);
      ids.add(a.json().get("orderId").asText());
    }
    return ids;
  }

  /** A fresh Idempotency-Key. */
  static String newKey() {
    return "key-" + UUID.randomUUID();
  }

  /** Polls the order's status until it is {@code status}; fails after {@code wait}. */
  JsonNode awaitStatus(String orderId, String status, Duration wait) {
    return Await.value(wait, "order " + orderId + " reaches " + status,
        () -> getJson("/orders/" + orderId + "/status"),
        doc -> doc.path("status").asText().equals(status));
  }

  /** GET that turns I/O failures into unchecked ones, for use inside {@code Await} lambdas. */
  JsonNode getJson(String path) {
    try {
      return get(path).json();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  Answer send(HttpRequest.Builder b) throws IOException {
    try {
      HttpResponse<String> r = client.send(b.timeout(Duration.ofSeconds(15)).build(),
          HttpResponse.BodyHandlers.ofString());
      JsonNode json = null;
      if (r.headers().firstValue("Content-Type").orElse("").startsWith("application/json")) {
        json = Json.MAPPER.readTree(r.body());
      }
      return new Answer(r.statusCode(), r, json);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}

package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.URI;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;

/**
 * A test fixture: a started {@link CheckoutApp} served by a {@link DemoServer} on a free loopback
 * port, and a {@link DemoHttp} client for it. Closing stops the server, then the app. Costs one app
 * start (its storage, transport and relay) per instance, so tests share one per class.
 */
record RunningDemo(CheckoutApp app, DemoServer server, DemoHttp http) implements AutoCloseable {

  /** Starts the app on {@code options} and serves it. */
  static RunningDemo start(DemoOptions options) throws Exception {
    return start(options, Map.of());
  }

  /** Starts the app on {@code options} with extra {@code settings} and serves it. */
  static RunningDemo start(DemoOptions options, Map<String, String> settings) throws Exception {
    return start(options, settings, CheckoutApp.Tuning.DEFAULTS);
  }

  /** Starts the app, tuned, and serves it. */
  static RunningDemo start(DemoOptions options, Map<String, String> settings,
      CheckoutApp.Tuning tuning) throws Exception {
    CheckoutApp app = CheckoutApp.start(options, settings, DemoTracing.fromEnvironment(),
        tuning);
    DemoServer server;
    try {
      server = new DemoServer(app, "127.0.0.1", 0);
    } catch (Exception | Error e) {
      app.close();
      throw e;
    }
    return new RunningDemo(app, server,
        new DemoHttp(URI.create("http://127.0.0.1:" + server.port())));
  }

  /**
   * Places an order for one book, waits up to {@code wait} for it to reach SUCCESS, and checks that
   * the API and the database each show exactly one SMS and one coupon for it.
   *
   * @return the order's id
   */
  String orderSucceedsWithOneOfEachEffect(Duration wait) throws IOException, SQLException {
    String id = http.order(DemoHttp.newKey(), "book-1", 1).json().get("orderId").asText();
    http.awaitStatus(id, "SUCCESS", wait);
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isEqualTo(1);
    assertThat(order.get("effects").get("coupon").asInt()).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.SMS)).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.COUPON)).isEqualTo(1);
    return id;
  }

  /**
   * Places an order for {@code poisonSku}, waits up to {@code wait} for it to reach FAILED, and
   * checks that the error names the poison SKU and that the API shows no SMS and no coupon.
   *
   * @return the order's id
   */
  String orderFailsAsPoison(String poisonSku, Duration wait) throws IOException {
    String id = http.order(DemoHttp.newKey(), poisonSku, 1).json().get("orderId").asText();
    JsonNode doc = http.awaitStatus(id, "FAILED", wait);
    assertThat(doc.get("error").asText()).contains("SKU " + poisonSku + " is poison");
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isZero();
    assertThat(order.get("effects").get("coupon").asInt()).isZero();
    return id;
  }

  @Override
  public void close() {
    try {
      server.close();
    } finally {
      app.close();
    }
  }
}

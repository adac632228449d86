package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.tck.Await;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The dead-letter endpoint on a broker transport, over HTTP in a real application: a
 * {@code @RelaykitListener} that throws {@code PermanentFailureException} dead-letters into its
 * group's dead-letter topic or queue, the endpoint lists it (naming that store), a replay through
 * the endpoint reaches the handler again, and a purge answers what the store allows.
 */
abstract class AbstractBrokerDeadLettersEndpointTest {

  static final JsonMapper JSON = JsonMapper.builder().build();
  static final Duration WAIT = Duration.ofSeconds(60);
  static final String PATH = "/actuator/relaykitdeadletters";

  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();
  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  /** The transport's properties; may create {@code destination} on a broker. */
  abstract List<String> transportProperties(String destination);

  /** The {@code store} name the endpoint gives the dead letters of the context {@code env}. */
  abstract String storeName(Environment env);

  /** Whether the transport's dead letters carry their group (the store's name always does). */
  boolean listsGroup() {
    return true;
  }

  /** Removes what the closed context left on a shared broker; by default nothing. */
  void cleanUp(Environment env) throws Exception {
  }

  ConfigurableApplicationContext start() {
    String destination = unique("poison");
    List<String> props = new ArrayList<>(List.of(
        "server.port=0",
        "server.address=127.0.0.1",
        "management.endpoints.web.exposure.include=relaykitdeadletters",
        "relaykit.retry.max-attempts=3",
        "relaykit.retry.initial-backoff=10ms",
        "relaykit.retry.max-backoff=20ms",
        "test.destination=" + destination,
        "test.group=" + unique("g")));
    props.addAll(transportProperties(destination));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(DeadLetterEndpointApp.class)
        .properties(props.toArray(String[]::new)).run();
    contexts.add(ctx);
    return ctx;
  }

  @AfterEach
  void close() throws Exception {
    for (ConfigurableApplicationContext ctx : contexts) {
      ctx.close();
      cleanUp(ctx.getEnvironment());
    }
  }

  /** Publishes one message and waits until the endpoint lists its dead letter. */
  JsonNode poison(ConfigurableApplicationContext ctx, String id) throws Exception {
    String destination = ctx.getEnvironment().getRequiredProperty("test.destination");
    ctx.getBean(Publisher.class).publish(destination, Message.builder().id(id)
        .type("order.placed").key("k-" + id).payload("{\"n\":1}").build())
        .get(30, TimeUnit.SECONDS);
    DeadLetterEndpointApp.Poisoned handler = ctx.getBean(DeadLetterEndpointApp.Poisoned.class);
    Await.until(WAIT, "the listener refused " + id, () -> handler.refused.contains(id));
    JsonNode[] page = new JsonNode[1];
    Await.until(WAIT, "the endpoint lists the dead letter of " + id, () -> {
      HttpResponse<String> r = getUnchecked(ctx, PATH + "?messageId=" + id);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      page[0] = JSON.readTree(r.body());
      return page[0].get("total").asLong() == 1;
    });
    return page[0];
  }

  @Test
  @DisplayName("a listener's permanent failure is listed with the store that holds it, and a"
      + " replay through the endpoint reaches the handler once")
  void listsAndReplaysTheBrokersDeadLetter() throws Exception {
    ConfigurableApplicationContext ctx = start();
    Environment env = ctx.getEnvironment();
    String destination = env.getRequiredProperty("test.destination");
    String group = env.getRequiredProperty("test.group");
    String id = unique("m");

    JsonNode page = poison(ctx, id);

    assertThat(page.get("deadLetters")).hasSize(1);
    JsonNode d = page.get("deadLetters").get(0);
    assertThat(d.get("messageId").asString()).isEqualTo(id);
    assertThat(d.get("source").asString()).isEqualTo(destination);
    if (listsGroup()) {
      assertThat(d.get("group").asString()).isEqualTo(group);
    }
    assertThat(d.get("store").asString()).isEqualTo(storeName(env));
    assertThat(d.get("reason").asString()).contains("poison: " + id);
    assertThat(d.get("payloadBytes").asInt()).isEqualTo(7);
    assertThat(d.has("payload")).isFalse();
    assertThat(ids(JSON.readTree(get(ctx, PATH + "?store=" + storeName(env))
        .body()))).contains(d.get("id").asString());
    assertThat(JSON.readTree(get(ctx, PATH + "?store=relaykit&messageId=" + id).body())
        .get("total").asLong()).as("relaykit's own store holds none of it").isZero();

    DeadLetterEndpointApp.Poisoned handler = ctx.getBean(DeadLetterEndpointApp.Poisoned.class);
    handler.healed.set(true);
    HttpResponse<String> replayed = post(ctx, PATH,
        "{\"id\":" + JSON.writeValueAsString(d.get("id").asString()) + "}");
    assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(200);
    JsonNode body = JSON.readTree(replayed.body());
    assertThat(body.get("messageId").asString()).isEqualTo(id);
    assertThat(body.get("store").asString()).isEqualTo(storeName(env));
    Await.until(WAIT, "the replayed message reaches the handler",
        () -> handler.handled.contains(id));
    Await.until(WAIT, "the endpoint no longer lists it", () -> JSON.readTree(
        getUnchecked(ctx, PATH + "?messageId=" + id).body()).get("total").asLong() == 0);
    assertThat(handler.handled).containsExactly(id);

    HttpResponse<String> again = post(ctx, PATH,
        "{\"id\":" + JSON.writeValueAsString(d.get("id").asString()) + "}");
    assertThat(again.statusCode()).as(again.body()).isEqualTo(404);
  }

  static List<String> ids(JsonNode page) {
    List<String> out = new ArrayList<>();
    page.get("deadLetters").forEach(n -> out.add(n.get("id").asString()));
    return out;
  }

  private URI uri(ConfigurableApplicationContext ctx, String path) {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return URI.create("http://127.0.0.1:" + port + path);
  }

  HttpResponse<String> get(ConfigurableApplicationContext ctx, String path)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(ctx, path)).timeout(Duration.ofSeconds(60))
        .GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  /** {@link #get} for a condition: an I/O failure is unchecked. */
  HttpResponse<String> getUnchecked(ConfigurableApplicationContext ctx, String path) {
    try {
      return get(ctx, path);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  HttpResponse<String> post(ConfigurableApplicationContext ctx, String path, String body)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(ctx, path)).timeout(Duration.ofSeconds(60))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> delete(ConfigurableApplicationContext ctx, String path)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(ctx, path)).timeout(Duration.ofSeconds(60))
        .DELETE().build(), HttpResponse.BodyHandlers.ofString());
  }
}

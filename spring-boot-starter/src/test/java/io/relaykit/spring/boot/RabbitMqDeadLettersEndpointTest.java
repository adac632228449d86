package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;

/**
 * The dead-letter endpoint with {@code relaykit.transport=rabbitmq} (the local broker, {@code
 * RELAYKIT_RABBITMQ_URI} or 127.0.0.1:5672 guest/guest): the group's dead-letter queue is listed,
 * replayed and purged. Exchanges and queues are deleted when the test ends.
 */
class RabbitMqDeadLettersEndpointTest extends AbstractBrokerDeadLettersEndpointTest {

  @Override
  List<String> transportProperties(String destination) {
    return RabbitMqTestBroker.properties("50ms,100ms");
  }

  @Override
  String storeName(Environment env) {
    return "rabbitmq:" + RabbitMqTopology.of(RabbitMqTestBroker.config(env)).queues(
        env.getRequiredProperty("test.destination"), env.getRequiredProperty("test.group"))
        .deadLetterQueue();
  }

  /** A RabbitMQ dead letter carries no group header: its queue, the store, names the group. */
  @Override
  boolean listsGroup() {
    return false;
  }

  @Override
  void cleanUp(Environment env) throws Exception {
    RabbitMqTransportConfig config = RabbitMqTestBroker.config(env);
    try (Connection c = RabbitMqTestBroker.admin(config)) {
      RabbitMqTopology.of(config).delete(c, env.getRequiredProperty("test.destination"),
          env.getRequiredProperty("test.group"), true);
    }
  }

  @Test
  @DisplayName("a purge of a RabbitMQ dead letter removes it from the queue: 200, then 404")
  void purgeRemovesIt() throws Exception {
    ConfigurableApplicationContext ctx = start();
    String id = unique("m");
    JsonNode page = poison(ctx, id);
    String path = PATH + "?id=" + URLEncoder.encode(
        page.get("deadLetters").get(0).get("id").asString(), StandardCharsets.UTF_8);

    HttpResponse<String> r = delete(ctx, path);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(JSON.readTree(r.body()).get("store").asString())
        .isEqualTo(storeName(ctx.getEnvironment()));
    assertThat(JSON.readTree(get(ctx, PATH + "?messageId=" + id).body()).get("total").asLong())
        .isZero();
    assertThat(delete(ctx, path).statusCode()).isEqualTo(404);
  }
}

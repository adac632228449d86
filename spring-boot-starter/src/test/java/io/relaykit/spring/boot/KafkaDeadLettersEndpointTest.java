package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;

/**
 * The dead-letter endpoint with {@code relaykit.transport=kafka} (the in-JVM KRaft broker from
 * relaykit-kafka's test jar): the group's dead-letter topic is listed and replayed, and a purge
 * says that retention is the broker's.
 */
class KafkaDeadLettersEndpointTest extends AbstractBrokerDeadLettersEndpointTest {

  @Override
  List<String> transportProperties(String destination) {
    KafkaTestBroker.createTopic(destination, 1);
    return List.of(
        "relaykit.transport=kafka",
        "spring.kafka.bootstrap-servers=" + KafkaTestBroker.bootstrapServers(),
        "relaykit.kafka.client-id-prefix=" + unique("spring"),
        "relaykit.kafka.commit-interval=100ms",
        "relaykit.kafka.poll-timeout=50ms",
        "relaykit.kafka.publish-timeout=20s",
        "relaykit.kafka.close-timeout=5s",
        // A closing consumer waits for its fetch in flight: at most 100 ms, not Kafka's 500.
        "relaykit.kafka.consumer.fetch.max.wait.ms=100");
  }

  @Override
  String storeName(Environment env) {
    return "kafka:" + KafkaTransportConfig.from(RelaykitEnvironment.settings(env)).deadLetterTopic(
        env.getRequiredProperty("test.destination"), env.getRequiredProperty("test.group"));
  }

  @Test
  @DisplayName("a purge of a Kafka dead letter is 409 saying retention is the broker's; the dead"
      + " letter stays listed")
  void purgeSaysRetentionIsTheBrokers() throws Exception {
    ConfigurableApplicationContext ctx = start();
    String id = unique("m");
    JsonNode page = poison(ctx, id);
    String deadLetterId = page.get("deadLetters").get(0).get("id").asString();
    assertThat(page.get("stores").findValuesAsString("store"))
        .contains(storeName(ctx.getEnvironment()), "relaykit");

    HttpResponse<String> r = delete(ctx, PATH + "?id="
        + java.net.URLEncoder.encode(deadLetterId, java.nio.charset.StandardCharsets.UTF_8));

    assertThat(r.statusCode()).as(r.body()).isEqualTo(409);
    String error = JSON.readTree(r.body()).get("error").asString();
    assertThat(error).contains("retention is the broker's").contains("retention.ms")
        .contains(storeName(ctx.getEnvironment()).substring("kafka:".length()));
    assertThat(JSON.readTree(get(ctx, PATH + "?messageId=" + id).body()).get("total").asLong())
        .isEqualTo(1);
  }
}

package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("CloudEvents binary mode on publish, against the spec's example event")
class CloudEventsTest {

  // The example of the CloudEvents Kafka protocol binding, v1.0.2, section 3.2.3 (binary mode).
  private static final Message EXAMPLE = Message.builder().id("1234-1234-1234")
      .type("com.example.someevent").key("mykey").payload(new byte[] {0x01, 0x02})
      .createdAt(Instant.parse("2018-04-05T03:56:24Z")).build();

  private static Map<String, String> attributes(Message m, String prefix) {
    Map<String, String> out = new LinkedHashMap<>();
    m.headers().forEach((k, v) -> {
      if (k.startsWith(prefix) || k.equals("content-type")) {
        out.put(k, v);
      }
    });
    return out;
  }

  @Test
  @DisplayName("Kafka: exactly the ce_ headers and content-type of the spec's example")
  void kafkaExample() {
    Message m = CloudEvents.kafka(EXAMPLE, "/mycontext/subcontext", null, "application/avro");
    assertThat(attributes(m, "ce_")).containsExactlyInAnyOrderEntriesOf(Map.of(
        "ce_specversion", "1.0",
        "ce_type", "com.example.someevent",
        "ce_source", "/mycontext/subcontext",
        "ce_id", "1234-1234-1234",
        "ce_time", "2018-04-05T03:56:24Z",
        "content-type", "application/avro"));
    assertThat(m.id()).isEqualTo(EXAMPLE.id());
    assertThat(m.traceId()).isEqualTo(EXAMPLE.traceId());
    assertThat(m.payload()).isEqualTo(EXAMPLE.payload());
  }

  @Test
  @DisplayName("AMQP 0-9-1: the same attributes under cloudEvents_, subject included")
  void amqpExample() {
    Message m = CloudEvents.amqp(EXAMPLE, "/mycontext/subcontext", "sub-1", null);
    assertThat(attributes(m, "cloudEvents_")).containsExactlyInAnyOrderEntriesOf(Map.of(
        "cloudEvents_specversion", "1.0",
        "cloudEvents_type", "com.example.someevent",
        "cloudEvents_source", "/mycontext/subcontext",
        "cloudEvents_id", "1234-1234-1234",
        "cloudEvents_time", "2018-04-05T03:56:24Z",
        "cloudEvents_subject", "sub-1"));
  }

  @Test
  @DisplayName("what relaykit writes, stripped of its own envelope, reads back as the same event")
  void roundTripWithoutEnvelope() {
    Message m = CloudEvents.kafka(EXAMPLE, "/mycontext/subcontext", null, "application/avro");
    Map<String, String> foreignOnly = new LinkedHashMap<>(m.headers());
    Message back = InboundMapping.foreign().cloudEvents(true).build().decode(foreignOnly,
        m.payload(), new InboundMapping.Inbound("t", "t-0@0", "mykey", Instant.EPOCH,
            Instant.EPOCH, Set.of(), InboundMapping.KAFKA_CLOUDEVENTS_PREFIX)).message();
    // Stripped of relaykit's envelope, the event's identity is its (source, id).
    assertThat(back.id()).isEqualTo(CloudEvents.identity("/mycontext/subcontext",
        "1234-1234-1234"));
    assertThat(back.type()).isEqualTo("com.example.someevent");
    assertThat(back.createdAt()).isEqualTo(EXAMPLE.createdAt());
    assertThat(back.key()).contains("mykey");
  }

  @Test
  @DisplayName("a blank source, subject or content type is refused, naming it")
  void badArguments() {
    assertThatThrownBy(() -> CloudEvents.kafka(EXAMPLE, " ", null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("source must not be blank");
    assertThatThrownBy(() -> CloudEvents.amqp(EXAMPLE, "/s", "", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("subject must not be blank");
    assertThatThrownBy(() -> CloudEvents.kafka(EXAMPLE, "/s", null, " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("dataContentType must not be blank");
  }
}

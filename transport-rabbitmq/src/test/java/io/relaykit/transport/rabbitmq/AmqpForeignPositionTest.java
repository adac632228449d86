package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("a foreign AMQP message's position and key")
class AmqpForeignPositionTest {

  private static final byte[] BODY = "data".getBytes(StandardCharsets.UTF_8);

  private static String position(Map<String, Object> headers, byte[] body, String messageId) {
    AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().messageId(messageId)
        .timestamp(new Date(1_000_000L)).headers(headers).build();
    Set<String> invalid = new HashSet<>();
    return AmqpHeaders.stablePosition("orders", props, AmqpHeaders.stringsLenient(props, invalid),
        body);
  }

  @Test
  @DisplayName("the same on redelivery (broker headers added), different for other bytes;"
      + " the message-id property wins")
  void stableAcrossRedelivery() {
    Map<String, Object> first = new HashMap<>(Map.of("tenant", "acme"));
    Map<String, Object> redelivered = new HashMap<>(first);
    redelivered.put("x-delivery-count", 3L);
    redelivered.put("x-death", List.of(Map.of("count", 1L)));
    String p = position(first, BODY, null);
    assertThat(p).matches("orders@sha256:[0-9a-f]{32}");
    // pinned (SHA-256 of "1000000", "\ntenant=acme", NUL, "data"): positions are ids, never change
    assertThat(p).isEqualTo("orders@sha256:5b50a8f6c07074542f2d09d4441792b6");
    assertThat(position(redelivered, BODY, null)).isEqualTo(p);
    assertThat(position(first, "other".getBytes(StandardCharsets.UTF_8), null)).isNotEqualTo(p);
    assertThat(position(Map.of("tenant", "other"), BODY, null)).isNotEqualTo(p);
    assertThat(position(first, BODY, "m-1")).isEqualTo("m-1");
    assertThat(position(first, BODY, " ")).isEqualTo(p);
  }

  @Test
  @DisplayName("non-scalar and non-UTF-8 headers are left out and named, not fatal")
  void lenientHeaders() {
    Map<String, Object> h = new HashMap<>();
    h.put("table", Map.of("a", 1));
    h.put("binary", LongStringHelper.asLongString(new byte[] {(byte) 0xff}));
    h.put("ok", LongStringHelper.asLongString("fine"));
    h.put("n", 7);
    Set<String> invalid = new HashSet<>();
    Map<String, String> out = AmqpHeaders.stringsLenient(
        new AMQP.BasicProperties.Builder().headers(h).build(), invalid);
    assertThat(out).containsOnly(Map.entry("ok", "fine"), Map.entry("n", "7"));
    assertThat(invalid).containsExactlyInAnyOrder("table", "binary");
  }

  @Test
  @DisplayName("the routing key is the key, except through the default exchange")
  void key() {
    assertThat(AmqpHeaders.foreignKey(new Envelope(1, false, "orders.x", "order-1")))
        .isEqualTo("order-1");
    assertThat(AmqpHeaders.foreignKey(new Envelope(1, false, "", "orders.g"))).isNull();
    assertThat(AmqpHeaders.foreignKey(new Envelope(1, false, "orders.x", ""))).isNull();
  }
}

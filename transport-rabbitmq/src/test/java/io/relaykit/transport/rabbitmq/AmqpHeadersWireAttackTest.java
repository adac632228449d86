package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.LongStringHelper;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.MessageHeaders;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("AMQP headers from the wire: wrong types and shapes")
class AmqpHeadersWireAttackTest {

  private static AMQP.BasicProperties props(Map<String, Object> headers) {
    return new AMQP.BasicProperties.Builder().headers(headers).build();
  }

  @Test
  @DisplayName("a relaykit message (it has relaykit-id) whose envelope header has the wrong type"
      + " is undecodable with a foreign-accepting mapping too, whatever its user headers")
  void relaykitEnvelopeReadStrictly() {
    for (int users = 0; users <= 2; users++) {
      Map<String, Object> h = new HashMap<>();
      h.put(MessageHeaders.ID, "m-1");
      h.put(MessageHeaders.ATTEMPT, Map.of("forged", 1));
      for (int u = 0; u < users; u++) {
        h.put("u" + u, "v");
      }
      if (users > 1) {
        h.put(AmqpHeaders.HEADER_ORDER, "u0\nu1");
      }
      Set<String> invalid = new HashSet<>();
      assertThatThrownBy(() -> AmqpHeaders.stringsLenient(props(h), invalid))
          .as("%d user headers", users).isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining(MessageHeaders.ATTEMPT);
    }
  }

  @Test
  @DisplayName("a relaykit message a shovel or federation moved (broker headers that are tables,"
      + " arrays, timestamps) still reads as its envelope")
  void shovelledRelaykitMessageReads() {
    Map<String, Object> h = new HashMap<>();
    h.put(MessageHeaders.ID, "m-1");
    h.put("x-shovelled", List.of(Map.of("shovel-name", "s")));
    h.put("x-shovelled-timestamp", new Date(0));
    h.put("x-received-from", List.of(Map.of("uri", "amqp://upstream")));
    h.put("tenant", "acme");
    assertThat(AmqpHeaders.stringsLenient(props(h), new HashSet<>()))
        .containsOnlyKeys(MessageHeaders.ID, "tenant");
    assertThat(AmqpHeaders.strings(props(h))).containsOnlyKeys(MessageHeaders.ID, "tenant");
  }

  @Test
  @DisplayName("x-death records of every odd shape give no key and never throw")
  void oddDeathShapes() {
    List<Object> shapes = new ArrayList<>(Arrays.asList(
        "x-death as a string", 42, List.of(), List.of("not a table"),
        Arrays.asList((Object) null),
        List.of(Map.of("exchange", "ex")),
        List.of(Map.of("exchange", "ex", "routing-keys", "not a list")),
        List.of(Map.of("exchange", "ex", "routing-keys", List.of())),
        List.of(Map.of("exchange", "ex", "routing-keys", List.of(" "))),
        List.of(Map.of("exchange", "ex", "routing-keys", List.of("k".repeat(1025)))),
        List.of(Map.of("exchange", "", "routing-keys", List.of("k"))),
        List.of(Map.of("exchange", new byte[] {1}, "routing-keys", List.of(new Date())))));
    Map<String, Object> nullKeys = new HashMap<>();
    nullKeys.put("exchange", "ex");
    nullKeys.put("routing-keys", Arrays.asList((Object) null));
    shapes.add(List.of(nullKeys));
    for (Object death : shapes) {
      Map<String, Object> h = new HashMap<>();
      h.put("x-death", death);
      assertThat(AmqpHeaders.deadLetteredKey(props(h))).as("%s", death).isNull();
    }
    assertThat(AmqpHeaders.deadLetteredKey(props(Map.of("x-death", List.of(
        Map.of("exchange", LongStringHelper.asLongString("ex"), "routing-keys",
            List.of(LongStringHelper.asLongString("order-7")))))))).isEqualTo("order-7");
  }
}

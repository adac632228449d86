package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.Priority;
import io.relaykit.retry.FailureClassifier;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class MessageHeadersTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123456789Z");
  private static final byte[] BODY = "{\"order\":42}".getBytes(StandardCharsets.UTF_8);

  private static Message full() {
    return Message.builder()
        .id("m-1").type("order.paid").schemaVersion(2).key("order-42").payload(BODY)
        .header("tenant", "acme").header("content-type", "application/json")
        .createdAt(T0).expiresAt(T0.plusSeconds(300)).priority(Priority.CRITICAL)
        .traceId("4bf92f3577b34da6a3ce929d0e0e4736")
        .build();
  }

  private static Map<String, String> wire() {
    return new LinkedHashMap<>(MessageHeaders.toWire(full()));
  }

  @Nested
  @DisplayName("round trip")
  class RoundTrip {

    @Test
    @DisplayName("toWire then fromWire gives back an equal message, expiry, priority and user headers included")
    void roundTrip() {
      Message m = full();
      Message back = MessageHeaders.fromWire(MessageHeaders.toWire(m), "order-42", BODY);
      assertThat(back).isEqualTo(m);
      assertThat(back.createdAt()).isEqualTo(T0); // nanoseconds survive
      assertThat(back.headers()).containsExactly(
          Map.entry("tenant", "acme"), Map.entry("content-type", "application/json"));
    }

    @Test
    @DisplayName("a message without key, expiry or user headers round-trips too")
    void minimal() {
      Message m = Message.builder().type("t").payload("p").createdAt(T0).build();
      Map<String, String> wire = MessageHeaders.toWire(m);
      assertThat(wire).doesNotContainKey(MessageHeaders.EXPIRES_AT);
      assertThat(MessageHeaders.fromWire(wire, null, "p".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(m);
    }

    @Test
    @DisplayName("the wire form has every envelope header, in a stable order, user headers last")
    void wireLayout() {
      assertThat(MessageHeaders.toWire(full()).keySet()).containsExactly(
          MessageHeaders.ID, MessageHeaders.TYPE, MessageHeaders.SCHEMA_VERSION,
          MessageHeaders.CREATED_AT, MessageHeaders.EXPIRES_AT, MessageHeaders.PRIORITY,
          MessageHeaders.TRACE_ID, "tenant", "content-type");
      assertThat(MessageHeaders.toWire(full())).containsEntry(MessageHeaders.SCHEMA_VERSION, "2")
          .containsEntry(MessageHeaders.PRIORITY, "CRITICAL")
          .containsEntry(MessageHeaders.CREATED_AT, "2026-01-01T00:00:00.123456789Z");
    }

    @Test
    @DisplayName("relaykit's own delivery headers (attempts, failures) stay out of the user headers")
    void deliveryHeadersDropped() {
      Map<String, String> wire = wire();
      wire.put(MessageHeaders.ATTEMPT, "3");
      wire.put(MessageHeaders.DEAD_REASON, "attempts exhausted");
      wire.put("Relaykit-Future-Thing", "x");
      Message back = MessageHeaders.fromWire(wire, "order-42", BODY);
      assertThat(back.headers()).containsOnlyKeys("tenant", "content-type");
      assertThat(back).isEqualTo(full());
    }

    @Test
    @DisplayName("a missing priority header means NORMAL")
    void missingPriority() {
      Map<String, String> wire = wire();
      wire.remove(MessageHeaders.PRIORITY);
      assertThat(MessageHeaders.fromWire(wire, "order-42", BODY).priority())
          .isEqualTo(Priority.NORMAL);
    }

    @Test
    @DisplayName("isReserved matches the prefix case-insensitively")
    void reserved() {
      assertThat(MessageHeaders.isReserved("relaykit-id")).isTrue();
      assertThat(MessageHeaders.isReserved("RELAYKIT-anything")).isTrue();
      assertThat(MessageHeaders.isReserved("relaykit")).isFalse();
      assertThat(MessageHeaders.isReserved("x-relaykit-id")).isFalse();
    }
  }

  @Nested
  @DisplayName("malformed input")
  class Malformed {

    private void assertMalformed(Map<String, String> wire, String key, byte[] body,
        String message) {
      assertThatThrownBy(() -> MessageHeaders.fromWire(wire, key, body))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessage(message)
          .satisfies(e -> assertThat(FailureClassifier.defaults().classify(e))
              .isEqualTo(FailureClassifier.Kind.PERMANENT));
    }

    @Test
    @DisplayName("each missing required header is named")
    void missing() {
      for (String name : new String[] {MessageHeaders.ID, MessageHeaders.TYPE,
          MessageHeaders.TRACE_ID, MessageHeaders.SCHEMA_VERSION, MessageHeaders.CREATED_AT}) {
        Map<String, String> wire = wire();
        wire.remove(name);
        assertMalformed(wire, "order-42", BODY, "missing header " + name);
        wire.put(name, " ");
        assertMalformed(wire, "order-42", BODY, "missing header " + name);
      }
    }

    @Test
    @DisplayName("a schema version that is not an integer, or below 1, is named")
    void schemaVersion() {
      Map<String, String> wire = wire();
      wire.put(MessageHeaders.SCHEMA_VERSION, "two");
      assertMalformed(wire, "order-42", BODY,
          "header relaykit-schema-version is not an integer: two");
      wire.put(MessageHeaders.SCHEMA_VERSION, "0");
      assertMalformed(wire, "order-42", BODY,
          "invalid message: schemaVersion must be >= 1, was 0");
    }

    @Test
    @DisplayName("an unparseable created-at or expires-at is named")
    void instants() {
      Map<String, String> wire = wire();
      wire.put(MessageHeaders.CREATED_AT, "yesterday");
      assertMalformed(wire, "order-42", BODY,
          "header relaykit-created-at is not an instant: yesterday");
      wire = wire();
      wire.put(MessageHeaders.EXPIRES_AT, "1700000000");
      assertMalformed(wire, "order-42", BODY,
          "header relaykit-expires-at is not an instant: 1700000000");
      wire = wire();
      wire.put(MessageHeaders.EXPIRES_AT, "2025-01-01T00:00:00Z");
      assertMalformed(wire, "order-42", BODY, "invalid message: expiresAt must be after createdAt ("
          + T0 + "), was 2025-01-01T00:00:00Z");
    }

    @Test
    @DisplayName("an unknown priority is named")
    void priority() {
      Map<String, String> wire = wire();
      wire.put(MessageHeaders.PRIORITY, "URGENT");
      assertMalformed(wire, "order-42", BODY, "header relaykit-priority is not a priority: URGENT");
    }

    @Test
    @DisplayName("an empty or missing body, a blank key or a null user header value is reported as invalid")
    void invalidMessage() {
      assertMalformed(wire(), "order-42", new byte[0], "invalid message: payload must not be empty");
      assertMalformed(wire(), "order-42", null, "invalid message: payload must not be null");
      assertMalformed(wire(), " ", BODY,
          "invalid message: key must not be blank (use null for no key)");
      Map<String, String> wire = wire();
      wire.put("tenant", null);
      assertMalformed(wire, "order-42", BODY, "invalid message: header tenant must not be null");
    }

    @Test
    @DisplayName("a null header map is a caller bug, rejected as such")
    void nullWire() {
      assertThatThrownBy(() -> MessageHeaders.fromWire(null, "k", BODY))
          .isInstanceOf(IllegalArgumentException.class)
          .isNotInstanceOf(MalformedMessageException.class)
          .hasMessage("wire must not be null");
    }
  }

  @Nested
  @DisplayName("instant headers")
  class Instants {

    @Test
    @DisplayName("every instant Instant.toString writes (years 0 to 9999, any precision) parses to the same instant")
    void canonicalForms() {
      Random random = new Random(42);
      long min = Instant.parse("0000-01-01T00:00:00Z").getEpochSecond();
      long max = Instant.parse("9999-12-31T23:59:59Z").getEpochSecond();
      for (int i = 0; i < 20_000; i++) {
        long second = min + (long) (random.nextDouble() * (max - min));
        int nanos = switch (i % 4) {
          case 0 -> 0;
          case 1 -> random.nextInt(1000) * 1_000_000;
          case 2 -> random.nextInt(1_000_000) * 1000;
          default -> random.nextInt(1_000_000_000);
        };
        String text = Instant.ofEpochSecond(second, nanos).toString();
        assertThat(MessageHeaders.parseInstant(text)).as(text).isEqualTo(Instant.parse(text));
      }
    }

    @Test
    @DisplayName("one to nine fraction digits, leap days and the ends of the range parse as Instant.parse does")
    void edges() {
      for (String text : List.of("2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00.12Z",
          "2026-01-01T00:00:00.1234Z", "2026-01-01T00:00:00.12345678Z",
          "2026-01-01T00:00:00.000000001Z", "2024-02-29T12:00:00Z", "2000-02-29T23:59:59.999Z",
          "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z",
          "1969-12-31T23:59:59.5Z")) {
        assertThat(MessageHeaders.parseInstant(text)).as(text).isEqualTo(Instant.parse(text));
      }
    }

    @Test
    @DisplayName("other spellings go to Instant.parse: same result when it accepts, same error when it refuses")
    void otherSpellings() {
      for (String text : List.of("2026-01-01t00:00:00z", "2026-01-01T23:59:60Z",
          "+10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00",
          "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-32T00:00:00Z",
          "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:00.Z",
          "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z",
          "2026-0a-01T00:00:00Z", "2026-01-01T00:00:00.12x4Z", "", "yesterday")) {
        Object expected;
        try {
          expected = Instant.parse(text);
        } catch (DateTimeParseException e) {
          expected = e.getClass().getName() + ": " + e.getMessage();
        }
        Object actual;
        try {
          actual = MessageHeaders.parseInstant(text);
        } catch (DateTimeParseException e) {
          actual = e.getClass().getName() + ": " + e.getMessage();
        }
        assertThat(actual).as(text).isEqualTo(expected);
      }
    }

    @Test
    @DisplayName("an impossible date in created-at is a malformed message naming the header")
    void impossibleDate() {
      Map<String, String> wire = wire();
      wire.put(MessageHeaders.CREATED_AT, "2025-02-29T00:00:00Z");
      assertThatThrownBy(() -> MessageHeaders.fromWire(wire, "order-42", BODY))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessage("header relaykit-created-at is not an instant: 2025-02-29T00:00:00Z")
          .hasCauseInstanceOf(DateTimeParseException.class);
    }
  }
}

package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadLetterHeadersTest {

  private static final Instant FIRST = Instant.parse("2026-03-01T10:00:00Z");
  private static final Instant LAST = Instant.parse("2026-03-01T10:05:00.5Z");
  private static final Instant FALLBACK = Instant.parse("2026-03-02T00:00:00Z");

  private static Message message() {
    return Message.builder().id("m-1").type("order.paid").key("order-1").payload(new byte[] {1})
        .header("tenant", "acme").build();
  }

  private static DeadLetter deadLetter(String exceptionClass, String exceptionMessage) {
    return new DeadLetter(message(), "orders", "attempts exhausted (5 of 5)", exceptionClass,
        exceptionMessage, 5, FIRST, LAST);
  }

  @Test
  void roundTrip() {
    DeadLetter d = deadLetter("java.io.IOException", "disk on fire");
    Map<String, String> wire = DeadLetterHeaders.toWire(d);

    assertThat(wire).containsAllEntriesOf(MessageHeaders.toWire(d.message()))
        .containsEntry(MessageHeaders.DEAD_REASON, "attempts exhausted (5 of 5)")
        .containsEntry(MessageHeaders.ATTEMPT, "5")
        .containsEntry(MessageHeaders.SOURCE, "orders");
    assertThat(DeadLetterHeaders.fromWire(d.message(), wire, "elsewhere", FALLBACK)).isEqualTo(d);
  }

  @Test
  void noExceptionWritesNoExceptionHeaders() {
    DeadLetter d = deadLetter(null, null);
    Map<String, String> wire = DeadLetterHeaders.toWire(d);

    assertThat(wire).doesNotContainKeys(MessageHeaders.EXCEPTION_CLASS,
        MessageHeaders.EXCEPTION_MESSAGE);
    assertThat(DeadLetterHeaders.fromWire(d.message(), wire, "elsewhere", FALLBACK)).isEqualTo(d);
  }

  @Test
  void theMapIsTheCallersToExtend() {
    Map<String, String> wire = DeadLetterHeaders.toWire(deadLetter(null, null));
    wire.put("transport-private", "x");
    assertThat(wire).containsEntry("transport-private", "x");
  }

  @Test
  void missingFailureHeadersGetDefaults() {
    DeadLetter d = DeadLetterHeaders.fromWire(message(), MessageHeaders.toWire(message()),
        "orders.dead", FALLBACK);

    assertThat(d.source()).isEqualTo("orders.dead");
    assertThat(d.reason()).isEqualTo("unknown (no " + MessageHeaders.DEAD_REASON + " header)");
    assertThat(d.attempts()).isZero();
    assertThat(d.firstFailureAt()).isEqualTo(FALLBACK);
    assertThat(d.lastFailureAt()).isEqualTo(FALLBACK);
    assertThat(d.exceptionClass()).isNull();
  }

  @Test
  void unreadableValuesAreReadLeniently() {
    Map<String, String> wire = DeadLetterHeaders.toWire(deadLetter(null, null));
    wire.put(MessageHeaders.ATTEMPT, "five");
    wire.put(MessageHeaders.FIRST_FAILURE_AT, "yesterday");
    wire.put(MessageHeaders.SOURCE, " ");
    wire.put(MessageHeaders.DEAD_REASON, "");

    DeadLetter d = DeadLetterHeaders.fromWire(message(), wire, "orders.dead", FALLBACK);

    assertThat(d.attempts()).isZero();
    assertThat(d.firstFailureAt()).isEqualTo(FALLBACK);
    // LAST is before the fallback that stands in for the first failure: clamped, never before it
    assertThat(d.lastFailureAt()).isEqualTo(FALLBACK);
    assertThat(d.source()).isEqualTo("orders.dead");
    assertThat(d.reason()).startsWith("unknown");
  }

  @Test
  void negativeAttemptsBecomeZero() {
    Map<String, String> wire = DeadLetterHeaders.toWire(deadLetter(null, null));
    wire.put(MessageHeaders.ATTEMPT, "-3");
    assertThat(DeadLetterHeaders.fromWire(message(), wire, "q", FALLBACK).attempts()).isZero();
  }

  @Test
  void nullArgumentsAreRefused() {
    assertThatThrownBy(() -> DeadLetterHeaders.toWire(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadLetter");
    assertThatThrownBy(() -> DeadLetterHeaders.fromWire(message(), null, "q", FALLBACK))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("wire");
    assertThatThrownBy(() -> DeadLetterHeaders.fromWire(message(), Map.of(), "q", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fallbackTime");
  }
}

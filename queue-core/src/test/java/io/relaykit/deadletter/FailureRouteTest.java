package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class FailureRouteTest {

  private static final Instant T0 = Instant.parse("2026-03-01T10:00:00Z");
  private static final Message MESSAGE = Message.builder().id("m-1").type("order.paid")
      .key("order-1").payload("{}").header("tenant", "acme").build();

  private static SubscriptionSpec spec(int maxAttempts) {
    return SubscriptionSpec.builder("orders", "billing").retryPolicy(RetryPolicy.builder()
        .maxAttempts(maxAttempts).backoff(Backoff.fixed(Duration.ofSeconds(2))).build()).build();
  }

  private static Delivery attempt(int attempt, Instant firstFailure) {
    return new Delivery(MESSAGE, "orders", attempt, firstFailure);
  }

  private static int utf8(Map<String, String> headers) {
    int n = 0;
    for (Map.Entry<String, String> h : headers.entrySet()) {
      n += h.getKey().getBytes(StandardCharsets.UTF_8).length
          + h.getValue().getBytes(StandardCharsets.UTF_8).length;
    }
    return n;
  }

  @Nested
  @DisplayName("decide")
  class Decide {

    @Test
    @DisplayName("givenUp: a dead letter at the delivery's attempt and first failure, for the"
        + " reason given, with no exception; a blank reason is refused")
    void givenUp() {
      FailureRoute r = FailureRoute.givenUp(attempt(3, T0), "closed on its last delivery",
          T0.plusSeconds(5));

      assertThat(r.isRetry()).isFalse();
      assertThat(r.attempt()).isEqualTo(3);
      assertThat(r.reason()).isEqualTo("closed on its last delivery");
      assertThat(r.firstFailureAt()).isEqualTo(T0);
      assertThat(r.lastFailureAt()).isEqualTo(T0.plusSeconds(5));
      assertThat(r.exceptionClass()).isNull();
      assertThat(r.deadLetter(MESSAGE, "billing").attempts()).isEqualTo(3);
      FailureRoute first = FailureRoute.givenUp(Delivery.first(MESSAGE, "orders"), "x", T0);
      assertThat(first.firstFailureAt()).isEqualTo(T0);
      org.assertj.core.api.Assertions.assertThatThrownBy(
          () -> FailureRoute.givenUp(attempt(1, null), " ", T0))
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("a first failure under the attempt limit retries after the policy's delay, its"
        + " first and last failure now")
    void firstFailureRetries() {
      FailureRoute r = FailureRoute.decide(spec(3), Delivery.first(MESSAGE, "orders"),
          new IOException("smtp down"), T0);

      assertThat(r.isRetry()).isTrue();
      assertThat(r.outcome()).isEqualTo(FailureRoute.Outcome.RETRY);
      assertThat(r.attempt()).isEqualTo(1);
      assertThat(r.delay()).isEqualTo(Duration.ofSeconds(2));
      assertThat(r.retryAt()).isEqualTo(T0.plusSeconds(2));
      assertThat(r.reason()).isNull();
      assertThat(r.firstFailureAt()).isEqualTo(T0);
      assertThat(r.lastFailureAt()).isEqualTo(T0);
      assertThat(r.source()).isEqualTo("orders");
      assertThat(r.exceptionClass()).isEqualTo(IOException.class.getName());
      assertThat(r.exceptionMessage()).isEqualTo("smtp down");
    }

    @Test
    @DisplayName("the last attempt dead-letters with the policy's reason and keeps the first"
        + " failure time")
    void attemptsExhausted() {
      FailureRoute r = FailureRoute.decide(spec(3), attempt(3, T0), new IOException("smtp down"),
          T0.plusSeconds(5));

      assertThat(r.isRetry()).isFalse();
      assertThat(r.reason()).isEqualTo("attempts exhausted (3 of 3): java.io.IOException: smtp"
          + " down");
      assertThat(r.delay()).isNull();
      assertThat(r.retryAt()).isNull();
      assertThat(r.firstFailureAt()).isEqualTo(T0);
      assertThat(r.lastFailureAt()).isEqualTo(T0.plusSeconds(5));
      DeadLetter d = r.deadLetter(MESSAGE);
      assertThat(d).isEqualTo(new DeadLetter(MESSAGE, "orders", r.reason(),
          IOException.class.getName(), "smtp down", 3, T0, T0.plusSeconds(5)));
    }

    @Test
    @DisplayName("a permanent failure dead-letters on its first attempt")
    void permanent() {
      FailureRoute r = FailureRoute.decide(spec(5), Delivery.first(MESSAGE, "orders"),
          new PermanentFailureException("unknown product"), T0);
      assertThat(r.isRetry()).isFalse();
      assertThat(r.attempt()).isEqualTo(1);
      assertThat(r.reason()).startsWith("permanent failure").contains("unknown product");
    }

    @Test
    @DisplayName("a retry policy that throws dead-letters the message with a reason naming it")
    void policyThrows() {
      SubscriptionSpec spec = SubscriptionSpec.builder("orders", "billing")
          .retryPolicy(RetryPolicy.builder().classifier(f -> {
            throw new IllegalStateException("classifier bug");
          }).build()).build();
      FailureRoute r = FailureRoute.decide(spec, Delivery.first(MESSAGE, "orders"),
          new IOException("x"), T0);
      assertThat(r.isRetry()).isFalse();
      assertThat(r.reason()).startsWith("retry policy failed: ").contains("classifier bug");
    }

    @Test
    @DisplayName("a clock that stepped back before the first failure counts as the first failure")
    void clockSteppedBack() {
      FailureRoute r = FailureRoute.decide(spec(3), attempt(2, T0), new IOException("x"),
          T0.minusSeconds(30));
      assertThat(r.lastFailureAt()).isEqualTo(T0);
      assertThat(r.retryAt()).isEqualTo(T0.plusSeconds(2));
    }

    @Test
    @DisplayName("a failure without an exception, or without a message, writes no exception text")
    void noException() {
      FailureRoute none = FailureRoute.decide(spec(3), Delivery.first(MESSAGE, "orders"), null,
          T0);
      assertThat(none.exceptionClass()).isNull();
      assertThat(none.exceptionMessage()).isNull();
      FailureRoute bare = FailureRoute.decide(spec(3), Delivery.first(MESSAGE, "orders"),
          new IllegalStateException(), T0);
      assertThat(bare.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
      assertThat(bare.exceptionMessage()).isNull();
    }

    @Test
    @DisplayName("a long exception text is cut to its bound in the reason, message and headers")
    void longExceptionIsBounded() {
      String huge = "stack of ".repeat(200_000) + "€😀";
      FailureRoute r = FailureRoute.decide(spec(1), Delivery.first(MESSAGE, "orders"),
          new IOException(huge), T0);

      assertThat(r.exceptionMessage().getBytes(StandardCharsets.UTF_8))
          .hasSizeLessThanOrEqualTo(FailureRoute.MAX_EXCEPTION_MESSAGE_BYTES);
      assertThat(r.exceptionMessage()).startsWith("stack of stack of").endsWith("...");
      assertThat(r.reason().getBytes(StandardCharsets.UTF_8))
          .hasSizeLessThanOrEqualTo(FailureRoute.MAX_REASON_BYTES);
      assertThat(r.reason()).startsWith("attempts exhausted (1 of 1): java.io.IOException: stack");
      Map<String, String> headers = r.headers(Map.of());
      headers.remove(MessageHeaders.SOURCE);
      assertThat(utf8(headers)).isLessThanOrEqualTo(FailureRoute.MAX_HEADER_BYTES);
    }

    @Test
    @DisplayName("null arguments are refused, naming the argument")
    void nulls() {
      assertThatThrownBy(() -> FailureRoute.decide(null, Delivery.first(MESSAGE, "o"), null, T0))
          .isInstanceOf(NullPointerException.class).hasMessage("spec");
      assertThatThrownBy(() -> FailureRoute.decide(spec(1), null, null, T0))
          .isInstanceOf(NullPointerException.class).hasMessage("delivery");
      assertThatThrownBy(() -> FailureRoute.decide(spec(1), Delivery.first(MESSAGE, "o"), null,
          null)).isInstanceOf(NullPointerException.class).hasMessage("now");
    }
  }

  @Nested
  @DisplayName("headers")
  class Headers {

    @Test
    @DisplayName("a retry sets attempt, failure times, exception, source and due time, and drops a"
        + " dead reason")
    void retryHeaders() {
      Map<String, String> wire = new LinkedHashMap<>(MessageHeaders.toWire(MESSAGE));
      wire.put(MessageHeaders.DEAD_REASON, "an old reason");
      wire.put(MessageHeaders.SOURCE_POSITION, "orders-0@7");
      FailureRoute r = FailureRoute.decide(spec(3), attempt(2, T0), new IOException("again"),
          T0.plusSeconds(3));

      Map<String, String> h = r.headers(wire);

      assertThat(h).containsAllEntriesOf(MessageHeaders.toWire(MESSAGE))
          .containsEntry(MessageHeaders.ATTEMPT, "2")
          .containsEntry(MessageHeaders.FIRST_FAILURE_AT, T0.toString())
          .containsEntry(MessageHeaders.LAST_FAILURE_AT, T0.plusSeconds(3).toString())
          .containsEntry(MessageHeaders.RETRY_AT, T0.plusSeconds(5).toString())
          .containsEntry(MessageHeaders.EXCEPTION_CLASS, IOException.class.getName())
          .containsEntry(MessageHeaders.EXCEPTION_MESSAGE, "again")
          .containsEntry(MessageHeaders.SOURCE, "orders")
          .containsEntry(MessageHeaders.SOURCE_POSITION, "orders-0@7")
          .doesNotContainKey(MessageHeaders.DEAD_REASON);
      assertThat(wire).as("the caller's map is untouched")
          .containsEntry(MessageHeaders.DEAD_REASON, "an old reason");
    }

    @Test
    @DisplayName("a dead letter sets the reason, drops the due time and the previous attempt's"
        + " exception text")
    void deadLetterHeaders() {
      Map<String, String> wire = new LinkedHashMap<>(MessageHeaders.toWire(MESSAGE));
      wire.put(MessageHeaders.RETRY_AT, T0.toString());
      wire.put(MessageHeaders.EXCEPTION_MESSAGE, "the previous attempt's text");
      FailureRoute r = FailureRoute.decide(spec(2), attempt(2, T0), null, T0.plusSeconds(1));

      Map<String, String> h = r.headers(wire);

      assertThat(h).containsEntry(MessageHeaders.DEAD_REASON, r.reason())
          .doesNotContainKeys(MessageHeaders.RETRY_AT, MessageHeaders.EXCEPTION_MESSAGE,
              MessageHeaders.EXCEPTION_CLASS);
    }

    @Test
    @DisplayName("the headers of attempt n read back as the delivery of attempt n + 1")
    void roundTrip() {
      FailureRoute r = FailureRoute.decide(spec(5), attempt(2, T0), new IOException("x"),
          T0.plusSeconds(1));
      Delivery next = FailureRoute.delivery(MESSAGE, "orders", r.headers(Map.of()));
      assertThat(next).isEqualTo(new Delivery(MESSAGE, "orders", 3, T0));
    }
  }

  @Nested
  @DisplayName("delivery")
  class DeliveryFromHeaders {

    @Test
    @DisplayName("without failure headers it is a first attempt")
    void first() {
      assertThat(FailureRoute.delivery(MESSAGE, "orders", MessageHeaders.toWire(MESSAGE)))
          .isEqualTo(Delivery.first(MESSAGE, "orders"));
    }

    @Test
    @DisplayName("an attempt that is not a whole number in range, or a time that is not an"
        + " instant, is a malformed message naming the header")
    void malformed() {
      for (String bad : new String[] {"many", "-1", "2147483647", "99999999999"}) {
        assertThatThrownBy(() -> FailureRoute.delivery(MESSAGE, "orders",
            Map.of(MessageHeaders.ATTEMPT, bad)))
            .as(bad).isInstanceOf(MalformedMessageException.class)
            .hasMessageContaining(MessageHeaders.ATTEMPT);
      }
      assertThatThrownBy(() -> FailureRoute.delivery(MESSAGE, "orders",
          Map.of(MessageHeaders.ATTEMPT, "1", MessageHeaders.FIRST_FAILURE_AT, "yesterday")))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining(MessageHeaders.FIRST_FAILURE_AT).hasMessageContaining("yesterday");
    }
  }

  @Nested
  @DisplayName("other routes")
  class OtherRoutes {

    @Test
    @DisplayName("an undecodable message dead-letters after 0 attempts with the decoder's reason")
    void undecodable() {
      FailureRoute r = FailureRoute.undecodable("orders",
          new MalformedMessageException("missing header relaykit-type"), T0);
      assertThat(r.isRetry()).isFalse();
      assertThat(r.attempt()).isZero();
      assertThat(r.reason()).isEqualTo("undecodable: missing header relaykit-type");
      assertThat(r.exceptionClass()).isEqualTo(MalformedMessageException.class.getName());
      assertThat(r.firstFailureAt()).isEqualTo(T0).isEqualTo(r.lastFailureAt());
      assertThatThrownBy(() -> FailureRoute.undecodable(" ", new IOException(), T0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("source");
    }

    @Test
    @DisplayName("a retry can be sent to dead letters instead, keeping attempt, times and"
        + " exception; a retry route has no dead letter")
    void deadLetterInstead() {
      FailureRoute retry = FailureRoute.decide(spec(3), attempt(2, T0), new IOException("x"),
          T0.plusSeconds(1));
      assertThatThrownBy(() -> retry.deadLetter(MESSAGE))
          .isInstanceOf(IllegalStateException.class);

      FailureRoute dead = retry.deadLetterInstead("retry copy refused: too large");

      assertThat(dead.isRetry()).isFalse();
      assertThat(dead.reason()).isEqualTo("retry copy refused: too large");
      assertThat(dead.deadLetter(MESSAGE)).isEqualTo(new DeadLetter(MESSAGE, "orders",
          "retry copy refused: too large", IOException.class.getName(), "x", 2, T0,
          T0.plusSeconds(1)));
      assertThatThrownBy(() -> retry.deadLetterInstead(""))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}

package io.relaykit.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final Backoff ONE_SECOND_DOUBLING = Backoff.exponential(Duration.ofSeconds(1));
  private static final IOException IO = new IOException("connection reset");

  private static RetryPolicy.Builder policy() {
    return RetryPolicy.builder().backoff(ONE_SECOND_DOUBLING);
  }

  @Nested
  @DisplayName("decisions")
  class Decisions {

    @Test
    @DisplayName("a retryable failure under the limits is retried after the backoff for that attempt")
    void retries() {
      RetryPolicy p = policy().maxAttempts(5).build();
      RetryPolicy.Decision d1 = p.decide(1, T0, T0, IO);
      assertThat(d1.retry()).isTrue();
      assertThat(d1.delay()).isEqualTo(Duration.ofSeconds(1));
      assertThat(d1.reason()).isNull();
      assertThat(p.decide(3, T0, T0.plusSeconds(3), IO).delay()).isEqualTo(Duration.ofSeconds(4));
    }

    @Test
    @DisplayName("maxAttempts counts the first attempt: the attempt that reaches it is dead-lettered")
    void attemptsExhausted() {
      RetryPolicy p = policy().maxAttempts(3).build();
      assertThat(p.decide(2, T0, T0, IO).retry()).isTrue();
      RetryPolicy.Decision d = p.decide(3, T0, T0, IO);
      assertThat(d.retry()).isFalse();
      assertThat(d.delay()).isNull();
      assertThat(d.reason())
          .isEqualTo("attempts exhausted (3 of 3): java.io.IOException: connection reset");
      assertThat(p.decide(7, T0, T0, IO).retry()).isFalse();
    }

    @Test
    @DisplayName("maxAttempts 1 never retries")
    void neverRetry() {
      RetryPolicy p = policy().maxAttempts(1).build();
      assertThat(p.decide(1, T0, T0, null).reason())
          .isEqualTo("attempts exhausted (1 of 1): no exception");
    }

    @Test
    @DisplayName("a permanent failure is dead-lettered on the first attempt, with its class and message")
    void permanent() {
      RetryPolicy p = policy().maxAttempts(10).build();
      RetryPolicy.Decision d = p.decide(1, T0, T0, new PermanentFailureException("unknown sku 42"));
      assertThat(d.retry()).isFalse();
      assertThat(d.reason()).isEqualTo(
          "permanent failure: io.relaykit.retry.PermanentFailureException: unknown sku 42");
      assertThat(p.isPermanent(new PermanentFailureException("x"))).isTrue();
      assertThat(p.isPermanent(IO)).isFalse();
    }

    @Test
    @DisplayName("the policy's classifier decides what is permanent")
    void classifier() {
      RetryPolicy p = policy()
          .classifier(FailureClassifier.builder().permanent(IllegalArgumentException.class).build())
          .build();
      assertThat(p.decide(1, T0, T0, new IllegalArgumentException()).reason())
          .isEqualTo("permanent failure: java.lang.IllegalArgumentException");
      assertThat(p.decide(1, T0, T0, IO).retry()).isTrue();
    }

    @Test
    @DisplayName("maxAge: a retry that would start after firstFailureAt + maxAge is dead-lettered; exactly at it is allowed")
    void maxAge() {
      RetryPolicy p = policy().maxAttempts(100).maxAge(Duration.ofSeconds(10)).build();
      // attempt 3 waits 4 s: at now = T0+6 s the retry starts at T0+10 s, exactly the limit
      assertThat(p.decide(3, T0, T0.plusSeconds(6), IO).retry()).isTrue();
      RetryPolicy.Decision late = p.decide(3, T0, T0.plusMillis(6_001), IO);
      assertThat(late.retry()).isFalse();
      assertThat(late.reason())
          .isEqualTo("max age PT10S exceeded: java.io.IOException: connection reset");
    }

    @Test
    @DisplayName("permanent is reported before exhaustion, exhaustion before age")
    void precedence() {
      RetryPolicy p = policy().maxAttempts(2).maxAge(Duration.ofSeconds(1)).build();
      assertThat(p.decide(5, T0, T0.plusSeconds(60), new PermanentFailureException("p")).reason())
          .startsWith("permanent failure");
      assertThat(p.decide(5, T0, T0.plusSeconds(60), IO).reason())
          .startsWith("attempts exhausted");
    }

    @Test
    @DisplayName("bad arguments are rejected naming them")
    void badArguments() {
      RetryPolicy p = RetryPolicy.defaults();
      assertThatThrownBy(() -> p.decide(0, T0, T0, IO))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("attempt must be >= 1, was 0");
      assertThatThrownBy(() -> p.decide(1, null, T0, IO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("firstFailureAt must not be null");
      assertThatThrownBy(() -> p.decide(1, T0, null, IO))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("now must not be null");
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("defaults: 5 attempts, no age limit, 1 s doubling capped at 5 min with full jitter, default classifier")
    void defaults() {
      RetryPolicy p = RetryPolicy.defaults();
      assertThat(p.maxAttempts()).isEqualTo(5);
      assertThat(p.maxAge()).isNull();
      assertThat(p.backoff().initial()).isEqualTo(Duration.ofSeconds(1));
      assertThat(p.backoff().max()).isEqualTo(Duration.ofMinutes(5));
      assertThat(p.backoff().jitter()).isEqualTo(Jitter.FULL);
      assertThat(p.classifier().classify(new PermanentFailureException("x")))
          .isEqualTo(FailureClassifier.Kind.PERMANENT);
      assertThat(p.classifier().classify(IO)).isEqualTo(FailureClassifier.Kind.RETRYABLE);
      // full jitter: a retry waits somewhere in [0, 2^(attempt-1) s]
      assertThat(p.decide(2, T0, T0, IO).delay()).isBetween(Duration.ZERO, Duration.ofSeconds(2));
      assertThat(p.toString()).contains("maxAttempts=5");
    }

    @Test
    @DisplayName("invalid settings are rejected naming the field and value")
    void invalid() {
      assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxAttempts must be >= 1, was 0");
      assertThatThrownBy(() -> RetryPolicy.builder().maxAge(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxAge must be positive, was PT0S");
      assertThatThrownBy(() -> RetryPolicy.builder().maxAge(Duration.ofSeconds(-1)).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxAge must be positive, was PT-1S");
      assertThatThrownBy(() -> RetryPolicy.builder().backoff(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("backoff must not be null");
      assertThatThrownBy(() -> RetryPolicy.builder().classifier(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("classifier must not be null");
    }

    @Test
    @DisplayName("a decision is either a retry with a delay or a dead letter with a reason")
    void decisionShape() {
      assertThat(RetryPolicy.Decision.retryAfter(Duration.ofSeconds(2)))
          .isEqualTo(new RetryPolicy.Decision(true, Duration.ofSeconds(2), null));
      assertThat(RetryPolicy.Decision.deadLetter("why").reason()).isEqualTo("why");
      assertThatThrownBy(() -> RetryPolicy.Decision.retryAfter(null))
          .isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> RetryPolicy.Decision.deadLetter(null))
          .isInstanceOf(NullPointerException.class);
    }
  }
}

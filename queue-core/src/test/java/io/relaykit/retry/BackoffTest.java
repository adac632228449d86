package io.relaykit.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class BackoffTest {

  private static final Duration MS_100 = Duration.ofMillis(100);

  @Nested
  @DisplayName("without jitter")
  class Plain {

    @Test
    @DisplayName("exponential doubles from the initial delay: initial * 2^(attempt-1)")
    void doubles() {
      Backoff b = Backoff.exponential(MS_100);
      assertThat(b.delay(1)).isEqualTo(Duration.ofMillis(100));
      assertThat(b.delay(2)).isEqualTo(Duration.ofMillis(200));
      assertThat(b.delay(3)).isEqualTo(Duration.ofMillis(400));
      assertThat(b.delay(10)).isEqualTo(Duration.ofMillis(100L << 9));
      assertThat(b.max()).isNull();
      assertThat(b.initial()).isEqualTo(MS_100);
      assertThat(b.jitter()).isEqualTo(Jitter.NONE);
    }

    @Test
    @DisplayName("a custom multiplier grows by that factor")
    void multiplier() {
      Backoff b = Backoff.exponential(Duration.ofSeconds(1), 1.5);
      assertThat(b.delay(1)).isEqualTo(Duration.ofMillis(1000));
      assertThat(b.delay(2)).isEqualTo(Duration.ofMillis(1500));
      assertThat(b.delay(3)).isEqualTo(Duration.ofMillis(2250));
    }

    @Test
    @DisplayName("fixed gives the same delay for every attempt")
    void fixed() {
      Backoff b = Backoff.fixed(Duration.ofSeconds(3));
      assertThat(b.delay(1)).isEqualTo(Duration.ofSeconds(3));
      assertThat(b.delay(50)).isEqualTo(Duration.ofSeconds(3));
      assertThat(b.max()).isEqualTo(Duration.ofSeconds(3));
    }

    @Test
    @DisplayName("withMax caps the delay, and stays at the cap")
    void capped() {
      Backoff b = Backoff.exponential(MS_100).withMax(Duration.ofMillis(500));
      assertThat(b.delay(3)).isEqualTo(Duration.ofMillis(400));
      assertThat(b.delay(4)).isEqualTo(Duration.ofMillis(500));
      assertThat(b.delay(5)).isEqualTo(Duration.ofMillis(500));
      assertThat(b.max()).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    @DisplayName("huge attempts saturate at the cap, or at Long.MAX_VALUE ns when uncapped, never overflow")
    void saturates() {
      Backoff capped = Backoff.exponential(MS_100).withMax(Duration.ofMinutes(5));
      assertThat(capped.delay(64)).isEqualTo(Duration.ofMinutes(5));
      assertThat(capped.delay(1_100)).isEqualTo(Duration.ofMinutes(5));
      assertThat(capped.delay(Integer.MAX_VALUE)).isEqualTo(Duration.ofMinutes(5));

      Backoff uncapped = Backoff.exponential(MS_100);
      assertThat(uncapped.delay(Integer.MAX_VALUE)).isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
      assertThat(uncapped.delay(200)).isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
      assertThat(uncapped.delay(30)).isPositive();
    }

    @Test
    @DisplayName("a Duration too large for nanoseconds is taken as the largest delay, not an overflow")
    void hugeDuration() {
      Backoff b = Backoff.fixed(ChronoUnit.FOREVER.getDuration());
      assertThat(b.delay(1)).isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
    }
  }

  @Nested
  @DisplayName("with jitter")
  class WithJitter {

    @Test
    @DisplayName("FULL is uniform in [0, d] and spreads over the whole range, at the cap too")
    void full() {
      Backoff b = Backoff.exponential(MS_100).withMax(Duration.ofSeconds(1))
          .withJitter(Jitter.FULL).withRandom(new SplittableRandom(7));
      long min = Long.MAX_VALUE;
      long max = 0;
      for (int i = 0; i < 2_000; i++) {
        long nanos = b.delay(20).toNanos(); // far past the cap
        assertThat(nanos).isBetween(0L, Duration.ofSeconds(1).toNanos());
        min = Math.min(min, nanos);
        max = Math.max(max, nanos);
      }
      // jitter survives the cap: the draws cover most of [0, 1 s]
      assertThat(min).isLessThan(Duration.ofMillis(50).toNanos());
      assertThat(max).isGreaterThan(Duration.ofMillis(950).toNanos());
    }

    @Test
    @DisplayName("EQUAL is uniform in [d/2, d]")
    void equal() {
      Backoff b = Backoff.exponential(MS_100).withJitter(Jitter.EQUAL)
          .withRandom(new SplittableRandom(11));
      long min = Long.MAX_VALUE;
      long max = 0;
      for (int i = 0; i < 2_000; i++) {
        long nanos = b.delay(3).toNanos(); // d = 400 ms
        assertThat(nanos).isBetween(Duration.ofMillis(200).toNanos(), Duration.ofMillis(400).toNanos());
        min = Math.min(min, nanos);
        max = Math.max(max, nanos);
      }
      assertThat(min).isLessThan(Duration.ofMillis(210).toNanos());
      assertThat(max).isGreaterThan(Duration.ofMillis(390).toNanos());
    }

    @Test
    @DisplayName("the same seed gives the same delays")
    void seeded() {
      Backoff a = Backoff.exponential(MS_100).withJitter(Jitter.FULL)
          .withRandom(new SplittableRandom(3));
      Backoff b = Backoff.exponential(MS_100).withJitter(Jitter.FULL)
          .withRandom(new SplittableRandom(3));
      for (int attempt = 1; attempt < 20; attempt++) {
        assertThat(a.delay(attempt)).isEqualTo(b.delay(attempt));
      }
    }

    @Test
    @DisplayName("jitter does not change the configuration it is derived from")
    void immutable() {
      Backoff base = Backoff.exponential(MS_100);
      Backoff jittered = base.withJitter(Jitter.FULL);
      assertThat(base.jitter()).isEqualTo(Jitter.NONE);
      assertThat(jittered.jitter()).isEqualTo(Jitter.FULL);
      assertThat(base.delay(2)).isEqualTo(Duration.ofMillis(200));
      assertThat(jittered.toString()).contains("jitter=FULL").contains("initial=PT0.1S");
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("attempt < 1 is rejected")
    void attempt() {
      Backoff b = Backoff.exponential(MS_100);
      assertThatThrownBy(() -> b.delay(0))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("attempt must be >= 1, was 0");
      assertThatThrownBy(() -> b.delay(-5))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("attempt must be >= 1, was -5");
    }

    @Test
    @DisplayName("initial must be positive")
    void initial() {
      assertThatThrownBy(() -> Backoff.exponential(null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("initial must be a positive duration, was null");
      assertThatThrownBy(() -> Backoff.exponential(Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("initial must be a positive duration, was PT0S");
      assertThatThrownBy(() -> Backoff.exponential(Duration.ofMillis(-1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("initial must be a positive duration, was PT-0.001S");
      assertThatThrownBy(() -> Backoff.fixed(Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("delay must be a positive duration, was PT0S");
    }

    @Test
    @DisplayName("the multiplier must be finite and >= 1")
    void multiplier() {
      for (double bad : new double[] {0.5, 0, -2, Double.NaN, Double.POSITIVE_INFINITY}) {
        assertThatThrownBy(() -> Backoff.exponential(MS_100, bad))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("multiplier must be a finite number >= 1, was " + bad);
      }
      assertThat(Backoff.exponential(MS_100, 1.0).delay(9)).isEqualTo(MS_100);
    }

    @Test
    @DisplayName("max must be positive and not below initial")
    void max() {
      Backoff b = Backoff.exponential(Duration.ofSeconds(1));
      assertThatThrownBy(() -> b.withMax(Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("max must be a positive duration, was PT0S");
      assertThatThrownBy(() -> b.withMax(null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("max must be a positive duration, was null");
      assertThatThrownBy(() -> b.withMax(Duration.ofMillis(999)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("max must be >= initial (PT1S), was PT0.999S");
      assertThat(b.withMax(Duration.ofSeconds(1)).delay(5)).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    @DisplayName("a null jitter or random source is rejected naming it")
    void nulls() {
      Backoff b = Backoff.exponential(MS_100);
      assertThatThrownBy(() -> b.withJitter(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("jitter must not be null");
      assertThatThrownBy(() -> b.withRandom(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("random must not be null");
    }
  }
}

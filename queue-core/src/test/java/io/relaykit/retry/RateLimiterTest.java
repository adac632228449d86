package io.relaykit.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.testing.Awaits;
import io.relaykit.testing.TestClock;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class RateLimiterTest {

  private final TestClock clock = new TestClock();

  private RateLimiter limiter(double rate, int burst) {
    return RateLimiter.builder().permitsPerSecond(rate).burst(burst).clock(clock).build();
  }

  @Nested
  @DisplayName("token bucket")
  class Bucket {

    @Test
    @DisplayName("starts full: a whole burst can be taken at once, then nothing until tokens accrue")
    void startsFull() {
      RateLimiter limiter = limiter(10, 3);
      assertThat(limiter.availablePermits()).isEqualTo(3);
      assertThat(limiter.tryAcquire()).isTrue();
      assertThat(limiter.tryAcquire()).isTrue();
      assertThat(limiter.tryAcquire()).isTrue();
      assertThat(limiter.tryAcquire()).isFalse();
      assertThat(limiter.availablePermits()).isZero();
    }

    @Test
    @DisplayName("refills at permitsPerSecond: 10/s gives one permit per 100 ms")
    void refillRate() {
      RateLimiter limiter = limiter(10, 1);
      assertThat(limiter.tryAcquire()).isTrue();
      clock.advanceMillis(99);
      assertThat(limiter.tryAcquire()).isFalse();
      assertThat(limiter.nanosUntilAvailable()).isEqualTo(Duration.ofMillis(1).toNanos());
      clock.advanceMillis(1);
      assertThat(limiter.nanosUntilAvailable()).isZero();
      assertThat(limiter.tryAcquire()).isTrue();
      assertThat(limiter.tryAcquire()).isFalse();
    }

    @Test
    @DisplayName("never holds more than the burst, however long it was idle")
    void cappedAtBurst() {
      RateLimiter limiter = limiter(100, 5);
      clock.advance(Duration.ofHours(1));
      assertThat(limiter.availablePermits()).isEqualTo(5);
      assertThat(limiter.tryAcquire(5)).isTrue();
      assertThat(limiter.tryAcquire()).isFalse();
    }

    @Test
    @DisplayName("over a long run, admits rate * time + burst and no more")
    void sustainedRate() {
      RateLimiter limiter = limiter(500, 50);
      int admitted = 0;
      for (int ms = 0; ms < 10_000; ms++) {
        while (limiter.tryAcquire()) {
          admitted++;
        }
        clock.advanceMillis(1);
      }
      // 10 s at 500/s = 5000 accrued during the run (the last millisecond's accrual is unused) + 50
      assertThat(admitted).isBetween(5_000 + 50 - 1, 5_000 + 50);
    }

    @Test
    @DisplayName("tryAcquire(n) takes all n permits or none")
    void allOrNothing() {
      RateLimiter limiter = limiter(1, 4);
      assertThat(limiter.tryAcquire(3)).isTrue();
      assertThat(limiter.tryAcquire(2)).isFalse();
      assertThat(limiter.availablePermits()).isEqualTo(1);
      assertThat(limiter.nanosUntilAvailable(2)).isEqualTo(Duration.ofSeconds(1).toNanos());
      clock.advance(Duration.ofSeconds(1));
      assertThat(limiter.tryAcquire(2)).isTrue();
    }

    @Test
    @DisplayName("fractional rates work: 0.5/s gives one permit every 2 s")
    void fractionalRate() {
      RateLimiter limiter = limiter(0.5, 1);
      assertThat(limiter.tryAcquire()).isTrue();
      assertThat(limiter.nanosUntilAvailable()).isEqualTo(Duration.ofSeconds(2).toNanos());
      clock.advance(Duration.ofMillis(1999));
      assertThat(limiter.tryAcquire()).isFalse();
      clock.advanceMillis(1);
      assertThat(limiter.tryAcquire()).isTrue();
    }

    @Test
    @DisplayName("a clock stepping back accrues nothing instead of going negative")
    void clockStepsBack() {
      AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-01-01T00:00:10Z"));
      InstantSource wall = now::get;
      RateLimiter limiter = RateLimiter.builder().permitsPerSecond(1).burst(1).clock(wall).build();
      assertThat(limiter.tryAcquire()).isTrue();
      now.set(Instant.parse("2026-01-01T00:00:05Z"));
      assertThat(limiter.tryAcquire()).isFalse();
      assertThat(limiter.nanosUntilAvailable()).isEqualTo(Duration.ofSeconds(1).toNanos());
      now.set(Instant.parse("2026-01-01T00:00:11Z"));
      assertThat(limiter.tryAcquire()).isTrue();
    }
  }

  @Nested
  @DisplayName("acquire")
  class Acquire {

    @Test
    @DisplayName("returns at once while permits are available")
    void immediate() throws InterruptedException {
      RateLimiter limiter = limiter(1, 2);
      limiter.acquire();
      limiter.acquire();
      assertThat(limiter.availablePermits()).isZero();
    }

    @Test
    @DisplayName("parks until a token is due, and takes it once the clock gets there")
    void parksUntilDue() throws Exception {
      RateLimiter limiter = limiter(1000, 1);
      assertThat(limiter.tryAcquire()).isTrue();
      AtomicBoolean acquired = new AtomicBoolean();
      AtomicReference<Throwable> error = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          limiter.acquire();
          acquired.set(true);
        } catch (Throwable e) {
          error.set(e);
        }
      }, "acquirer");
      waiter.start();
      Awaits.untilBlocked(waiter);
      assertThat(acquired).isFalse();

      clock.advanceMillis(1);
      waiter.join(10_000);
      assertThat(error.get()).isNull();
      assertThat(acquired).isTrue();
      assertThat(limiter.tryAcquire()).isFalse();
    }

    @Test
    @DisplayName("is interruptible and then takes no permit")
    void interruptible() throws Exception {
      RateLimiter limiter = limiter(0.001, 1);
      assertThat(limiter.tryAcquire()).isTrue();
      AtomicReference<Throwable> error = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          limiter.acquire();
        } catch (Throwable e) {
          error.set(e);
        }
      }, "acquirer");
      waiter.start();
      Awaits.untilBlocked(waiter);
      waiter.interrupt();
      waiter.join(10_000);
      assertThat(error.get()).isInstanceOf(InterruptedException.class);
      clock.advance(Duration.ofSeconds(1000));
      assertThat(limiter.availablePermits()).isEqualTo(1);
    }

    @Test
    @DisplayName("several waiters are each admitted as tokens accrue, never more than accrued")
    void severalWaiters() throws Exception {
      RateLimiter limiter = limiter(1000, 1);
      assertThat(limiter.tryAcquire()).isTrue();
      AtomicInteger admitted = new AtomicInteger();
      Thread[] waiters = new Thread[3];
      for (int i = 0; i < waiters.length; i++) {
        waiters[i] = new Thread(() -> {
          try {
            limiter.acquire();
            admitted.incrementAndGet();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }, "acquirer-" + i);
        waiters[i].start();
      }
      for (Thread w : waiters) {
        Awaits.untilBlocked(w);
      }
      for (int i = 1; i <= 3; i++) {
        clock.advanceMillis(1);
        int expected = i;
        Awaits.until(Duration.ofSeconds(10), expected + " admitted", () -> admitted.get() >= expected);
        assertThat(admitted.get()).isEqualTo(expected);
      }
      for (Thread w : waiters) {
        w.join(10_000);
      }
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("defaults: one second's worth of burst, at least 1, on the system clock")
    void defaults() {
      RateLimiter limiter = RateLimiter.perSecond(500);
      assertThat(limiter.permitsPerSecond()).isEqualTo(500);
      assertThat(limiter.burst()).isEqualTo(500);
      assertThat(RateLimiter.perSecond(0.2).burst()).isEqualTo(1);
      assertThat(RateLimiter.perSecond(2.5).burst()).isEqualTo(3);
    }

    @Test
    @DisplayName("invalid rate, burst or clock is rejected naming the field and value")
    void invalid() {
      assertThatThrownBy(() -> RateLimiter.builder().build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("permitsPerSecond must be a finite number > 0, was NaN");
      assertThatThrownBy(() -> RateLimiter.perSecond(0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("permitsPerSecond must be a finite number > 0, was 0.0");
      assertThatThrownBy(() -> RateLimiter.perSecond(-5))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-5.0");
      assertThatThrownBy(() -> RateLimiter.perSecond(Double.POSITIVE_INFINITY))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Infinity");
      assertThatThrownBy(() -> RateLimiter.builder().permitsPerSecond(1).burst(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("burst must be >= 1, was 0");
      assertThatThrownBy(() -> RateLimiter.builder().permitsPerSecond(1).clock(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("clock must not be null");
    }

    @Test
    @DisplayName("a rate so low that the bucket would span more than 100 years is rejected")
    void absurdlySlow() {
      assertThat(RateLimiter.perSecond(1e-9).burst()).isEqualTo(1);
      assertThatThrownBy(() -> RateLimiter.perSecond(1e-10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("permitsPerSecond 1.0E-10 with burst 1");
    }

    @Test
    @DisplayName("asking for fewer than 1 or more than the burst is rejected")
    void invalidPermits() {
      RateLimiter limiter = limiter(10, 3);
      assertThatThrownBy(() -> limiter.tryAcquire(0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("permits must be between 1 and the burst (3), was 0");
      assertThatThrownBy(() -> limiter.tryAcquire(4))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 4");
      assertThatThrownBy(() -> limiter.acquire(4))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> limiter.nanosUntilAvailable(-1))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(limiter.availablePermits()).isEqualTo(3);
    }
  }
}

package io.relaykit.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.testing.TestClock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class BacklogMonitorTest {

  private static final Duration EVERY = Duration.ofSeconds(10);

  private final TestClock clock = new TestClock();
  private BacklogMonitor monitor = new BacklogMonitor(BacklogMonitor.Config.defaults(), clock);

  /** Records one sample now, then moves the clock to the next sampling time. */
  private void sample(long depth, long oldestAgeSeconds) {
    monitor.record(depth, Duration.ofSeconds(oldestAgeSeconds));
    clock.advance(EVERY);
  }

  @Nested
  @DisplayName("HEALTHY")
  class Healthy {

    @Test
    @DisplayName("a small backlog that goes up and down is healthy")
    void steady() {
      long[] depths = {12, 18, 9, 15, 20, 11, 14, 17, 10, 13};
      for (long d : depths) {
        sample(d, 2);
      }
      BacklogSnapshot snapshot = monitor.snapshot();
      assertThat(snapshot.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      assertThat(snapshot.depth()).isEqualTo(13);
      assertThat(snapshot.oldestAge()).isEqualTo(Duration.ofSeconds(2));
      assertThat(snapshot.samples()).isEqualTo(10);
      assertThat(snapshot.window()).isEqualTo(Duration.ofSeconds(90));
      assertThat(snapshot.at()).isEqualTo(TestClock.START.plusSeconds(90));
      assertThat(Math.abs(snapshot.depthPerSecond())).isLessThan(0.2);
    }

    @Test
    @DisplayName("a latest depth over maxDepth is OVER_BOUND at once, whatever the trend; at the"
        + " bound or below it is judged as usual")
    void overBound() {
      BacklogMonitor bounded = new BacklogMonitor(BacklogMonitor.Config.builder().maxDepth(100)
          .build(), java.time.InstantSource.fixed(java.time.Instant.EPOCH));
      bounded.record(new BacklogSample(java.time.Instant.EPOCH, 100, Duration.ZERO));
      assertThat(bounded.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      bounded.record(new BacklogSample(java.time.Instant.EPOCH.plusSeconds(1), 101,
          Duration.ZERO));
      assertThat(bounded.verdict()).isEqualTo(BacklogVerdict.OVER_BOUND);
      assertThat(bounded.snapshot().verdict()).isEqualTo(BacklogVerdict.OVER_BOUND);
      org.assertj.core.api.Assertions.assertThatThrownBy(
          () -> BacklogMonitor.Config.builder().maxDepth(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDepth");
    }

    @Test
    @DisplayName("without samples the snapshot is healthy and empty")
    void empty() {
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      assertThat(monitor.snapshot()).isEqualTo(new BacklogSnapshot(BacklogVerdict.HEALTHY, null, 0,
          Duration.ZERO, 0, Duration.ZERO, 0.0));
    }

    @Test
    @DisplayName("fewer than minSamples is no evidence, however steep; the fifth sample decides")
    void minSamplesBoundary() {
      for (int i = 0; i < 4; i++) {
        sample(1_000L * i, 5);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      sample(4_000, 5);
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.SUSTAINED_GROWTH);
    }

    @Test
    @DisplayName("a single step up followed by a plateau is not growth")
    void stepIsNotGrowth() {
      long[] depths = {0, 0, 0, 500, 500, 500, 500};
      for (long d : depths) {
        sample(d, 3);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }

    @Test
    @DisplayName("an empty queue is never stalled, whatever the reported age")
    void emptyNotStalled() {
      for (int i = 0; i < 10; i++) {
        sample(0, 100 + 10L * i);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }
  }

  @Nested
  @DisplayName("SUSTAINED_GROWTH")
  class Growth {

    @Test
    @DisplayName("producers outpacing consumers: depth rises 50 per 10 s while the head keeps moving")
    void producersOutpace() {
      for (int i = 0; i < 12; i++) {
        sample(200 + 50L * i, 4 + i); // the head moves: age grows far slower than time
      }
      BacklogSnapshot snapshot = monitor.snapshot();
      assertThat(snapshot.verdict()).isEqualTo(BacklogVerdict.SUSTAINED_GROWTH);
      assertThat(snapshot.depthPerSecond()).isEqualTo(5.0);
      assertThat(snapshot.depth()).isEqualTo(750);
    }

    @Test
    @DisplayName("the growth threshold is inclusive: exactly growthPerSecond counts, just below does not")
    void thresholdBoundary() {
      BacklogMonitor.Config config = BacklogMonitor.Config.builder().growthPerSecond(2.0).build();
      monitor = new BacklogMonitor(config, clock);
      for (int i = 0; i < 7; i++) {
        sample(20L * i, 1); // 2.0 per second
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.SUSTAINED_GROWTH);

      monitor = new BacklogMonitor(config, clock);
      for (int i = 0; i < 7; i++) {
        sample(19L * i, 1); // 1.9 per second
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }

    @Test
    @DisplayName("growth that has just stopped is no longer sustained")
    void growthStopped() {
      long[] depths = {100, 200, 300, 400, 400, 400, 400, 400};
      for (long d : depths) {
        sample(d, 3);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }
  }

  @Nested
  @DisplayName("DRAINING_SPIKE")
  class DrainingSpike {

    @Test
    @DisplayName("a burst of 5000 being worked off is a draining spike until it is below the high mark")
    void burstDrains() {
      long[] depths = {100, 100, 5_000, 4_500, 4_000, 3_500, 3_000};
      for (long d : depths) {
        sample(d, 2);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.DRAINING_SPIKE);

      long[] rest = {2_400, 1_800, 1_200, 600, 150, 100};
      for (long d : rest) {
        sample(d, 2);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }

    @Test
    @DisplayName("the high mark is inclusive: falling to exactly highDepth is a spike, one less is healthy")
    void highDepthBoundary() {
      long[] depths = {3_000, 2_500, 2_000, 1_500, 1_000};
      for (long d : depths) {
        sample(d, 2);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.DRAINING_SPIKE);

      monitor = new BacklogMonitor(BacklogMonitor.Config.defaults(), clock);
      long[] lower = {3_000, 2_500, 2_000, 1_500, 999};
      for (long d : lower) {
        sample(d, 2);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }

    @Test
    @DisplayName("a high but flat backlog is not a spike")
    void highFlat() {
      for (int i = 0; i < 8; i++) {
        sample(5_000, 3);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }
  }

  @Nested
  @DisplayName("STALLED")
  class Stalled {

    @Test
    @DisplayName("the consumer dies: depth stops falling and the oldest age grows with the clock")
    void consumerDies() {
      // healthy flow first: depth wobbles, the head keeps moving
      long[] healthy = {30, 25, 35, 28};
      for (long d : healthy) {
        sample(d, 2);
      }
      // the consumer stops at age 2 s: nothing leaves, new messages keep arriving
      long age = 2;
      long depth = 28;
      for (int i = 0; i < 5; i++) {
        depth += 3;
        age += 10;
        sample(depth, age);
      }
      // 5 samples into the stall but oldest age only 52 s < stallAge 60 s
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      sample(depth, age + 10); // 62 s
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
      assertThat(monitor.snapshot().oldestAge()).isEqualTo(Duration.ofSeconds(62));
    }

    @Test
    @DisplayName("stallAge is inclusive: exactly stallAge stalls, one second less does not")
    void stallAgeBoundary() {
      for (int i = 0; i < 5; i++) {
        sample(40, 19 + 10L * i); // ages 19..59
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);

      monitor = new BacklogMonitor(BacklogMonitor.Config.defaults(), clock);
      for (int i = 0; i < 5; i++) {
        sample(40, 20 + 10L * i); // ages 20..60
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
    }

    @Test
    @DisplayName("stalled wins over growth: a dead consumer under rising load is STALLED")
    void stalledOverGrowth() {
      for (int i = 0; i < 8; i++) {
        sample(100L * i + 1, 30 + 10L * i);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
    }

    @Test
    @DisplayName("a slow head is not a stall: age gaining less than 90% of the elapsed time")
    void slowHeadIsNotStall() {
      for (int i = 0; i < 8; i++) {
        sample(40, 60 + 8L * i); // gains 8 s per 10 s
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);

      monitor = new BacklogMonitor(BacklogMonitor.Config.defaults(), clock);
      for (int i = 0; i < 8; i++) {
        sample(40, 60 + 9L * i); // gains exactly 90%
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
    }

    @Test
    @DisplayName("any drain restarts the evidence: the run after it needs minSamples again")
    void drainResetsRun() {
      for (int i = 0; i < 6; i++) {
        sample(50, 60 + 10L * i);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
      sample(49, 120); // one message left the queue (the age may even stay: the next was as old)
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      for (int i = 1; i <= 3; i++) {
        sample(49, 120 + 10L * i);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
      sample(49, 160);
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
    }
  }

  @Nested
  @DisplayName("window")
  class Window {

    @Test
    @DisplayName("samples older than the window are forgotten, so an old stall does not stick")
    void evictsByTime() {
      monitor = new BacklogMonitor(BacklogMonitor.Config.builder()
          .window(Duration.ofSeconds(60)).build(), clock);
      for (int i = 0; i < 7; i++) {
        sample(40, 60 + 10L * i);
      }
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.STALLED);
      for (int i = 0; i < 7; i++) {
        sample(10 + (i % 2) * 5, 1);
      }
      assertThat(monitor.samples()).hasSize(7);
      assertThat(monitor.samples().get(0).at()).isEqualTo(clock.instant().minusSeconds(70));
      assertThat(monitor.verdict()).isEqualTo(BacklogVerdict.HEALTHY);
    }

    @Test
    @DisplayName("never keeps more than maxSamples")
    void evictsByCount() {
      monitor = new BacklogMonitor(BacklogMonitor.Config.builder()
          .minSamples(3).maxSamples(4).build(), clock);
      for (int i = 0; i < 10; i++) {
        sample(i, 1);
      }
      assertThat(monitor.samples()).extracting(BacklogSample::depth).containsExactly(6L, 7L, 8L, 9L);
    }

    @Test
    @DisplayName("a sample older than the latest is rejected; an equal time is accepted")
    void outOfOrder() {
      Instant t = TestClock.START.plusSeconds(100);
      monitor.record(new BacklogSample(t, 5, Duration.ZERO));
      monitor.record(new BacklogSample(t, 6, Duration.ZERO));
      assertThatThrownBy(() -> monitor.record(new BacklogSample(t.minusMillis(1), 5, Duration.ZERO)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("older than the latest sample at " + t);
      assertThatThrownBy(() -> monitor.record(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("sample must not be null");
      assertThat(monitor.samples()).hasSize(2);
    }
  }

  @Nested
  @DisplayName("bad input and configuration")
  class Configuration {

    @Test
    @DisplayName("defaults are pinned")
    void defaults() {
      BacklogMonitor.Config config = BacklogMonitor.Config.defaults();
      assertThat(config.window()).isEqualTo(Duration.ofMinutes(5));
      assertThat(config.minSamples()).isEqualTo(5);
      assertThat(config.maxSamples()).isEqualTo(600);
      assertThat(config.growthPerSecond()).isEqualTo(1.0);
      assertThat(config.highDepth()).isEqualTo(1000);
      assertThat(config.stallAge()).isEqualTo(Duration.ofMinutes(1));
      assertThat(monitor.config()).isEqualTo(config);
    }

    @Test
    @DisplayName("each invalid threshold is rejected naming the field and value")
    void invalid() {
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().window(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("window must be a positive duration, was PT0S");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().window(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("window");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().minSamples(2).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("minSamples must be >= 3, was 2");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().maxSamples(4).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxSamples must be >= minSamples (5), was 4");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().growthPerSecond(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("growthPerSecond must be a finite number > 0, was 0.0");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().growthPerSecond(Double.NaN).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NaN");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder().highDepth(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("highDepth must be >= 1, was 0");
      assertThatThrownBy(() -> BacklogMonitor.Config.builder()
          .stallAge(Duration.ofSeconds(-1)).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("stallAge must be a positive duration, was PT-1S");
      assertThatThrownBy(() -> new BacklogMonitor(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("config must not be null");
    }

    @Test
    @DisplayName("a sample with negative depth or age, or missing time or age, is rejected")
    void invalidSample() {
      assertThatThrownBy(() -> new BacklogSample(TestClock.START, -1, Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("depth must be >= 0, was -1");
      assertThatThrownBy(() -> new BacklogSample(TestClock.START, 1, Duration.ofSeconds(-2)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("oldestAge must not be negative, was PT-2S");
      assertThatThrownBy(() -> new BacklogSample(null, 1, Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("at must not be null");
      assertThatThrownBy(() -> new BacklogSample(TestClock.START, 1, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("oldestAge must not be null");
    }
  }
}

package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The console's history sampler: its thread, its schedule, failures and stop. */
@DisplayName("The console's history sampler")
class RelaykitConsoleSamplerTest {

  private static final long WAIT_S = 30;

  @Test
  @DisplayName("runs at once and then again, on one daemon thread named relaykit-console-sampler")
  void runsOnANamedDaemonThread() throws Exception {
    CountDownLatch three = new CountDownLatch(3);
    AtomicReference<Thread> thread = new AtomicReference<>();
    RelaykitConsoleSampler s = new RelaykitConsoleSampler(() -> () -> {
      thread.set(Thread.currentThread());
      three.countDown();
    }, Duration.ofMillis(5));
    assertThat(s.isRunning()).isFalse();
    s.start();
    s.start(); // a second start is no second schedule
    try {
      assertThat(s.isRunning()).isTrue();
      assertThat(three.await(WAIT_S, TimeUnit.SECONDS)).as("three runs").isTrue();
      assertThat(thread.get().getName()).isEqualTo(RelaykitConsoleSampler.THREAD_NAME);
      assertThat(thread.get().isDaemon()).isTrue();
    } finally {
      s.stop();
    }
    assertThat(s.isRunning()).isFalse();
    long after = s.runs();
    // The executor has terminated; its worker thread ends right after.
    thread.get().join(TimeUnit.SECONDS.toMillis(WAIT_S));
    assertThat(thread.get().isAlive()).as("the thread ends with stop").isFalse();
    assertThat(s.runs()).as("no run after stop").isEqualTo(after);
  }

  @Test
  @DisplayName("a run that throws is counted and the next run goes on")
  void failureDoesNotEndTheSchedule() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    CountDownLatch recovered = new CountDownLatch(1);
    RelaykitConsoleSampler s = new RelaykitConsoleSampler(() -> () -> {
      if (calls.incrementAndGet() <= 2) {
        throw new IllegalStateException("database down");
      }
      recovered.countDown();
    }, Duration.ofMillis(5));
    s.start();
    try {
      assertThat(recovered.await(WAIT_S, TimeUnit.SECONDS)).isTrue();
    } finally {
      s.stop();
    }
    assertThat(s.failedRuns()).isEqualTo(2);
    assertThat(s.runs()).isGreaterThanOrEqualTo(1);
  }

  @Test
  @DisplayName("stop lets the run under way finish without interrupting it, and no run follows")
  void stopWaitsWithoutInterrupting() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean interrupted = new AtomicBoolean();
    AtomicBoolean finished = new AtomicBoolean();
    AtomicInteger calls = new AtomicInteger();
    RelaykitConsoleSampler s = new RelaykitConsoleSampler(() -> () -> {
      calls.incrementAndGet();
      entered.countDown();
      try {
        if (!release.await(WAIT_S, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
      } catch (InterruptedException e) {
        interrupted.set(true);
        Thread.currentThread().interrupt();
      }
      finished.set(true);
    }, Duration.ofMillis(5));
    s.start();
    assertThat(entered.await(WAIT_S, TimeUnit.SECONDS)).isTrue();
    AtomicBoolean finishedWhenStopReturned = new AtomicBoolean();
    Thread stopper = new Thread(() -> {
      s.stop();
      finishedWhenStopReturned.set(finished.get());
    }, "test-stopper");
    stopper.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
    while (s.isRunning() && System.nanoTime() < deadline) {
      Thread.onSpinWait(); // stop() has begun once the sampler says it is not running
    }
    assertThat(s.isRunning()).isFalse();
    release.countDown();
    stopper.join(TimeUnit.SECONDS.toMillis(WAIT_S));
    assertThat(stopper.isAlive()).isFalse();
    assertThat(finishedWhenStopReturned).as("stop returned after the run finished").isTrue();
    assertThat(interrupted).as("the run was not interrupted").isFalse();
    assertThat(calls).as("no run after stop").hasValue(1);
  }

  @Test
  @DisplayName("stop before start, and twice, does nothing")
  void stopIsIdempotent() {
    RelaykitConsoleSampler s = new RelaykitConsoleSampler(() -> () -> { }, Duration.ofSeconds(1));
    s.stop();
    s.start();
    s.stop();
    s.stop();
    assertThat(s.isRunning()).isFalse();
  }

  @Test
  @DisplayName("an interval that is not positive is refused")
  void badInterval() {
    assertThatThrownBy(() -> new RelaykitConsoleSampler(() -> () -> { }, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("interval");
  }
}

package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("HandlerWatchdog, on a manual timer and clock")
class HandlerWatchdogTest {

  private static final long MS = 1_000_000;

  /** Records what is scheduled instead of running it; {@link #runDue} runs what is due. */
  private static final class ManualTimer extends ScheduledThreadPoolExecutor {
    long now;
    final List<long[]> at = new ArrayList<>();
    final List<Runnable> tasks = new ArrayList<>();

    ManualTimer() {
      super(1);
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
      at.add(new long[] {now + unit.toNanos(delay)});
      tasks.add(task);
      return null;
    }

    /** The time the only pending task is due at. */
    long nextAt() {
      assertThat(tasks).hasSize(1);
      return at.get(0)[0];
    }

    void advanceTo(long time) {
      now = time;
      while (!tasks.isEmpty() && at.get(0)[0] <= now) {
        Runnable task = tasks.remove(0);
        at.remove(0);
        task.run();
      }
    }
  }

  private final ManualTimer timer = new ManualTimer();
  private final HandlerWatchdog watchdog =
      new HandlerWatchdog(Duration.ofMillis(100), timer, () -> timer.now);

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
    timer.shutdownNow();
  }

  @Test
  @DisplayName("with nothing running, the scan comes back one timeout later")
  void idle() {
    watchdog.start();
    assertThat(timer.nextAt()).isEqualTo(100 * MS);
    timer.advanceTo(100 * MS);
    assertThat(timer.nextAt()).isEqualTo(200 * MS);
  }

  @Test
  @DisplayName("a call started between scans expires at its own deadline, not a timeout late")
  void expiresAtDeadline() {
    AtomicInteger expired = new AtomicInteger();
    watchdog.start();
    timer.advanceTo(60 * MS);
    HandlerWatchdog.Call call = watchdog.begin(expired::incrementAndGet); // due at 160 ms
    timer.advanceTo(100 * MS);
    assertThat(expired).hasValue(0);
    assertThat(timer.nextAt()).isEqualTo(160 * MS);
    timer.advanceTo(159 * MS);
    assertThat(expired).hasValue(0);
    timer.advanceTo(160 * MS);
    assertThat(expired).hasValue(1);
    assertThat(Thread.currentThread().isInterrupted()).as("the call's thread was interrupted")
        .isTrue();
    assertThat(watchdog.end(call)).as("its own result no longer counts").isFalse();
    assertThat(Thread.currentThread().isInterrupted()).as("end clears the interrupt").isFalse();
    timer.advanceTo(400 * MS);
    assertThat(expired).as("expired once").hasValue(1);
  }

  @Test
  @DisplayName("a call that ends in time is never expired, and its thread is not interrupted")
  void endsInTime() {
    AtomicInteger expired = new AtomicInteger();
    watchdog.start();
    HandlerWatchdog.Call call = watchdog.begin(expired::incrementAndGet);
    timer.advanceTo(99 * MS);
    assertThat(watchdog.end(call)).isTrue();
    HandlerWatchdog.Call next = watchdog.begin(expired::incrementAndGet); // due at 199 ms
    timer.advanceTo(150 * MS);
    assertThat(watchdog.end(next)).isTrue();
    timer.advanceTo(1000 * MS);
    assertThat(expired).hasValue(0);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
  }

  @Test
  @DisplayName("calls on several threads: the scan expires the late ones and waits for the earliest"
      + " of the rest")
  void severalThreads() throws Exception {
    AtomicInteger expired = new AtomicInteger();
    watchdog.start();
    List<HandlerWatchdog.Call> calls = new ArrayList<>();
    for (long start : new long[] {10, 30, 50}) {
      timer.now = start * MS;
      Thread t = new Thread(() -> calls.add(watchdog.begin(expired::incrementAndGet)));
      t.start();
      t.join();
    }
    timer.advanceTo(120 * MS); // scan at 100: nothing due, next at 110; at 110 the first expires
    assertThat(expired).hasValue(1);
    assertThat(timer.nextAt()).isEqualTo(130 * MS);
    assertThat(watchdog.end(calls.get(1))).isTrue(); // the second finishes in time
    timer.advanceTo(150 * MS);
    assertThat(expired).hasValue(2);
    assertThat(watchdog.end(calls.get(0))).isFalse();
    assertThat(watchdog.end(calls.get(2))).isFalse();
  }

  @Test
  @DisplayName("the thread of an expired call leaves end only after the expiry action has run, so"
      + " what the action sets up is in place before that thread moves on")
  void endWaitsForTheExpiryAction() throws Exception {
    watchdog.start();
    AtomicBoolean actionDone = new AtomicBoolean();
    AtomicReference<Boolean> mine = new AtomicReference<>();
    AtomicReference<Boolean> actionDoneAtEnd = new AtomicReference<>();
    AtomicReference<Thread> worker = new AtomicReference<>();
    CountDownLatch begun = new CountDownLatch(1);
    worker.set(new Thread(() -> {
      // The action stands for the runtime parking the record's key. It lets the worker reach end
      // first (blocked there, or gone past it if end does not wait), then completes.
      HandlerWatchdog.Call call = watchdog.begin(() -> {
        Await.until(Duration.ofSeconds(30), "the worker at or past end", () ->
            worker.get().getState() == Thread.State.BLOCKED
                || worker.get().getState() == Thread.State.TERMINATED);
        actionDone.set(true);
      });
      begun.countDown();
      try {
        new CountDownLatch(1).await(30, TimeUnit.SECONDS); // a handler stuck until interrupted
      } catch (InterruptedException e) {
        // the expiry's interrupt
      }
      mine.set(watchdog.end(call));
      actionDoneAtEnd.set(actionDone.get());
    }, "watchdog-test-worker"));
    worker.get().start();
    assertThat(begun.await(30, TimeUnit.SECONDS)).isTrue();

    timer.advanceTo(100 * MS); // expires the call here, on the test thread
    worker.get().join(TimeUnit.SECONDS.toMillis(30));

    assertThat(actionDone).isTrue();
    assertThat(mine.get()).as("the call's own result no longer counts").isFalse();
    assertThat(actionDoneAtEnd.get()).as("the expiry action had finished when end returned")
        .isTrue();
  }

  @Test
  @DisplayName("an expiry action that throws does not stop the scans")
  void failingActionKeepsScanning() {
    AtomicInteger expired = new AtomicInteger();
    watchdog.start();
    HandlerWatchdog.Call bad = watchdog.begin(() -> {
      throw new IllegalStateException("boom");
    });
    timer.advanceTo(100 * MS);
    assertThat(watchdog.end(bad)).isFalse();
    HandlerWatchdog.Call good = watchdog.begin(expired::incrementAndGet);
    timer.advanceTo(200 * MS);
    assertThat(expired).hasValue(1);
    assertThat(watchdog.end(good)).isFalse();
  }

  @Test
  @DisplayName("a timeout that is not positive is refused, naming it")
  void badTimeout() {
    assertThatThrownBy(() -> new HandlerWatchdog(Duration.ZERO, timer))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("timeout must be positive, was PT0S");
    assertThat(new HandlerWatchdog(Duration.ofDays(365L * 1000), timer)).isNotNull();
  }
}

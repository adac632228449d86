package io.relaykit.ordering;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.testing.Awaits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class KeyedExecutorTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<KeyedExecutor> executors = new ArrayList<>();
  private final List<CountDownLatch> gates = new ArrayList<>();

  private KeyedExecutor executor(int threads, int maxQueued) {
    return executor(KeyedExecutor.builder().threads(threads).maxQueued(maxQueued));
  }

  private KeyedExecutor executor(KeyedExecutor.Builder builder) {
    KeyedExecutor e = builder.build();
    executors.add(e);
    return e;
  }

  /** A latch the test opens; opened anyway after each test so no worker stays stuck. */
  private CountDownLatch gate() {
    CountDownLatch g = new CountDownLatch(1);
    gates.add(g);
    return g;
  }

  private static Runnable awaiting(CountDownLatch started, CountDownLatch gate) {
    return () -> {
      started.countDown();
      try {
        gate.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
  }

  /**
   * Submits on {@code key} a task that holds its worker until the returned gate opens, and waits
   * until that task runs.
   */
  private CountDownLatch hold(KeyedExecutor executor, Object key) throws InterruptedException {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch gate = gate();
    executor.submit(key, awaiting(started, gate));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    return gate;
  }

  /**
   * A thread blocked in {@code executor.submit(key, task)} (the constructor returns once it is
   * blocked); it records whether that submit returned, or what it threw.
   */
  private static final class BlockedSubmitter {
    final AtomicBoolean accepted = new AtomicBoolean();
    final AtomicReference<Throwable> error = new AtomicReference<>();
    final Thread thread;

    BlockedSubmitter(KeyedExecutor executor, Object key, Runnable task) {
      thread = new Thread(() -> {
        try {
          executor.submit(key, task);
          accepted.set(true);
        } catch (Throwable e) {
          error.set(e);
        }
      }, "submitter");
      thread.start();
      Awaits.untilBlocked(thread);
    }

    void join() throws InterruptedException {
      thread.join(WAIT.toMillis());
    }
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    gates.forEach(CountDownLatch::countDown);
    for (KeyedExecutor e : executors) {
      e.shutdownNow();
      assertThat(e.awaitTermination(WAIT)).as("workers exit").isTrue();
    }
  }

  @Nested
  @DisplayName("ordering")
  class Ordering {

    @Test
    @DisplayName("tasks of one key never overlap and run in submission order, across many keys")
    void perKeyOrderAndExclusion() throws Exception {
      KeyedExecutor executor = executor(4, 64);
      int keys = 16;
      int perKey = 200;
      Map<Integer, List<Integer>> seen = new ConcurrentHashMap<>();
      Map<Integer, AtomicBoolean> running = new ConcurrentHashMap<>();
      AtomicInteger overlaps = new AtomicInteger();
      for (int k = 0; k < keys; k++) {
        seen.put(k, Collections.synchronizedList(new ArrayList<>()));
        running.put(k, new AtomicBoolean());
      }
      for (int i = 0; i < perKey; i++) {
        for (int k = 0; k < keys; k++) {
          int key = k;
          int seq = i;
          executor.submit(key, () -> {
            if (!running.get(key).compareAndSet(false, true)) {
              overlaps.incrementAndGet();
            }
            seen.get(key).add(seq);
            Thread.yield();
            running.get(key).set(false);
          });
        }
      }
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(overlaps).hasValue(0);
      List<Integer> expected = new ArrayList<>();
      for (int i = 0; i < perKey; i++) {
        expected.add(i);
      }
      for (int k = 0; k < keys; k++) {
        assertThat(seen.get(k)).as("key %d", k).isEqualTo(expected);
      }
      assertThat(executor.pending()).isZero();
      assertThat(executor.activeKeys()).isZero();
    }

    @Test
    @DisplayName("different keys run in parallel")
    void keysInParallel() throws Exception {
      KeyedExecutor executor = executor(2, 8);
      CountDownLatch bothStarted = new CountDownLatch(2);
      CountDownLatch gate = gate();
      executor.submit("a", awaiting(bothStarted, gate));
      executor.submit("b", awaiting(bothStarted, gate));
      assertThat(bothStarted.await(10, TimeUnit.SECONDS)).as("both keys running at once").isTrue();
      assertThat(executor.activeKeys()).isEqualTo(2);
      gate.countDown();
      assertThat(executor.awaitDrained(WAIT)).isTrue();
    }

    @Test
    @DisplayName("a key's next task waits for its running task even when threads are idle")
    void sameKeyWaits() throws Exception {
      KeyedExecutor executor = executor(3, 8);
      CountDownLatch firstStarted = new CountDownLatch(1);
      CountDownLatch gate = gate();
      AtomicBoolean secondRan = new AtomicBoolean();
      executor.submit("k", awaiting(firstStarted, gate));
      executor.submit("k", () -> secondRan.set(true));
      assertThat(firstStarted.await(10, TimeUnit.SECONDS)).isTrue();
      // other keys still flow while "k" is held: run a few to completion on the idle threads
      CountDownLatch others = new CountDownLatch(5);
      for (int i = 0; i < 5; i++) {
        executor.submit("other-" + i, others::countDown);
      }
      assertThat(others.await(10, TimeUnit.SECONDS)).isTrue();
      // a task counts as finished once its worker has done the bookkeeping after run() returns
      Awaits.until(WAIT, "only k's two tasks pending", () -> executor.pending() == 2);
      assertThat(secondRan).isFalse();

      gate.countDown();
      Awaits.until(WAIT, "second task of k runs", secondRan::get);
      assertThat(executor.awaitDrained(WAIT)).isTrue();
    }

    @Test
    @DisplayName("null-key tasks run anywhere, side by side")
    void nullKeyUnordered() throws Exception {
      KeyedExecutor executor = executor(3, 8);
      CountDownLatch allStarted = new CountDownLatch(3);
      CountDownLatch gate = gate();
      for (int i = 0; i < 3; i++) {
        executor.submit(null, awaiting(allStarted, gate));
      }
      assertThat(allStarted.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(executor.activeKeys()).isZero();
      gate.countDown();
      assertThat(executor.awaitDrained(WAIT)).isTrue();
    }

    @Test
    @DisplayName("keys are served round-robin: a hot key does not starve the others")
    void roundRobin() throws Exception {
      KeyedExecutor executor = executor(1, 16);
      List<String> order = new CopyOnWriteArrayList<>();
      CountDownLatch gate = hold(executor, "x");
      for (int i = 1; i <= 3; i++) {
        String name = "a" + i;
        executor.submit("a", () -> order.add(name));
      }
      executor.submit("b", () -> order.add("b1"));
      gate.countDown();
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(order).containsExactly("a1", "b1", "a2", "a3");
    }
  }

  @Nested
  @DisplayName("backpressure")
  class Backpressure {

    @Test
    @DisplayName("trySubmit refuses and a timed submit times out when maxQueued tasks are unfinished")
    void full() throws Exception {
      KeyedExecutor executor = executor(1, 2);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch gate = gate();
      assertThat(executor.trySubmit("a", awaiting(started, gate))).isTrue();
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(executor.remainingCapacity()).isEqualTo(1);
      AtomicBoolean ran = new AtomicBoolean();
      assertThat(executor.trySubmit("b", () -> ran.set(true))).isTrue();
      assertThat(executor.remainingCapacity()).isZero();

      AtomicBoolean refused = new AtomicBoolean();
      assertThat(executor.trySubmit("c", () -> refused.set(true))).isFalse();
      assertThat(executor.submit("c", () -> refused.set(true), Duration.ofMillis(20))).isFalse();
      assertThat(executor.pending()).isEqualTo(2);

      gate.countDown();
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(ran).isTrue();
      assertThat(refused).isFalse();
      assertThat(executor.remainingCapacity()).isEqualTo(2);
    }

    @Test
    @DisplayName("a blocking submit waits for room and is accepted when a task finishes")
    void blockingSubmit() throws Exception {
      KeyedExecutor executor = executor(1, 1);
      CountDownLatch gate = hold(executor, "a");

      AtomicBoolean ran = new AtomicBoolean();
      BlockedSubmitter submitter = new BlockedSubmitter(executor, "b", () -> ran.set(true));
      assertThat(submitter.accepted).isFalse();

      gate.countDown();
      submitter.join();
      assertThat(submitter.error.get()).isNull();
      assertThat(submitter.accepted).isTrue();
      Awaits.until(WAIT, "b runs", ran::get);
    }

    @Test
    @DisplayName("an interrupted blocking submit throws and does not accept the task")
    void interruptedSubmit() throws Exception {
      KeyedExecutor executor = executor(1, 1);
      hold(executor, "a");
      BlockedSubmitter submitter = new BlockedSubmitter(executor, "b", () -> { });
      submitter.thread.interrupt();
      submitter.join();
      assertThat(submitter.error.get()).isInstanceOf(InterruptedException.class);
      assertThat(executor.pending()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("failures")
  class Failures {

    @Test
    @DisplayName("a throwing task reaches the failure handler and neither kills its worker nor blocks its key")
    void throwingTask() throws Exception {
      List<String> failures = new CopyOnWriteArrayList<>();
      KeyedExecutor executor = executor(KeyedExecutor.builder().threads(1).maxQueued(8)
          .failureHandler((key, failure) -> failures.add(key + ":" + failure.getMessage())));
      AtomicInteger after = new AtomicInteger();
      executor.submit("k", () -> {
        throw new IllegalStateException("boom");
      });
      executor.submit("k", after::incrementAndGet);
      executor.submit(null, () -> {
        throw new AssertionError("an error too");
      });
      executor.submit("k", after::incrementAndGet);
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(after).hasValue(2);
      assertThat(failures).containsExactly("k:boom", "null:an error too");
      assertThat(executor.isTerminated()).isFalse();
    }

    @Test
    @DisplayName("a throwing failure handler is contained too")
    void throwingHandler() throws Exception {
      KeyedExecutor executor = executor(KeyedExecutor.builder().threads(1).maxQueued(8)
          .failureHandler((key, failure) -> {
            throw new IllegalStateException("handler broke");
          }));
      AtomicBoolean ran = new AtomicBoolean();
      executor.submit("k", () -> {
        throw new IllegalStateException("boom");
      });
      executor.submit("k", () -> ran.set(true));
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(ran).isTrue();
    }

    @Test
    @DisplayName("an interrupt a task leaves behind does not reach the next task")
    void interruptDoesNotLeak() throws Exception {
      KeyedExecutor executor = executor(1, 8);
      AtomicReference<Boolean> nextSawInterrupt = new AtomicReference<>();
      executor.submit("k", () -> Thread.currentThread().interrupt());
      executor.submit("k", () -> nextSawInterrupt.set(Thread.currentThread().isInterrupted()));
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(nextSawInterrupt.get()).isFalse();
    }
  }

  @Nested
  @DisplayName("shutdown")
  class Shutdown {

    @Test
    @DisplayName("shutdown stops intake but runs everything already accepted")
    void shutdownDrains() throws Exception {
      KeyedExecutor executor = executor(2, 16);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch gate = gate();
      AtomicInteger ran = new AtomicInteger();
      executor.submit("a", awaiting(started, gate));
      for (int i = 0; i < 5; i++) {
        executor.submit("a", ran::incrementAndGet);
      }
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
      executor.shutdown();
      assertThat(executor.isShutdown()).isTrue();
      assertThatThrownBy(() -> executor.submit("b", ran::incrementAndGet))
          .isInstanceOf(RejectedExecutionException.class);
      assertThatThrownBy(() -> executor.trySubmit("b", ran::incrementAndGet))
          .isInstanceOf(RejectedExecutionException.class);
      assertThatThrownBy(() -> executor.submit(null, ran::incrementAndGet, Duration.ofSeconds(1)))
          .isInstanceOf(RejectedExecutionException.class);
      gate.countDown();
      assertThat(executor.awaitTermination(WAIT)).isTrue();
      assertThat(ran).hasValue(5);
      assertThat(executor.pending()).isZero();
    }

    @Test
    @DisplayName("a submit waiting for room is rejected when the executor shuts down")
    void waitingSubmitRejected() throws Exception {
      KeyedExecutor executor = executor(1, 1);
      hold(executor, "a");
      BlockedSubmitter submitter = new BlockedSubmitter(executor, "b", () -> { });
      executor.shutdown();
      submitter.join();
      assertThat(submitter.error.get()).isInstanceOf(RejectedExecutionException.class);
    }

    @Test
    @DisplayName("close returns true when everything finished within the deadline")
    void closeDrained() throws Exception {
      KeyedExecutor executor = executor(2, 64);
      AtomicInteger ran = new AtomicInteger();
      for (int i = 0; i < 50; i++) {
        executor.submit(i % 3, ran::incrementAndGet);
      }
      assertThat(executor.close(WAIT)).isTrue();
      assertThat(ran).hasValue(50);
      assertThat(executor.awaitTermination(WAIT)).isTrue();
      assertThat(executor.isTerminated()).isTrue();
    }

    @Test
    @DisplayName("close past its deadline returns false, drops queued tasks and interrupts running ones")
    void closeTimesOut() throws Exception {
      KeyedExecutor executor = executor(1, 8);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch gate = gate();
      AtomicBoolean interrupted = new AtomicBoolean();
      AtomicBoolean queuedRan = new AtomicBoolean();
      executor.submit("a", () -> {
        started.countDown();
        try {
          gate.await();
        } catch (InterruptedException e) {
          interrupted.set(true);
        }
      });
      executor.submit("a", () -> queuedRan.set(true));
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

      assertThat(executor.close(Duration.ofMillis(50))).isFalse();
      assertThat(executor.awaitTermination(WAIT)).isTrue();
      assertThat(interrupted).isTrue();
      assertThat(queuedRan).isFalse();
      assertThat(executor.pending()).isZero();
    }

    @Test
    @DisplayName("shutdownNow returns the queued tasks, keyed and unkeyed, but not the running one")
    void shutdownNow() throws Exception {
      KeyedExecutor executor = executor(1, 8);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch gate = gate();
      Runnable running = awaiting(started, gate);
      Runnable sameKey = () -> { };
      Runnable otherKey = () -> { };
      Runnable unkeyed = () -> { };
      executor.submit("a", running);
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
      executor.submit("a", sameKey);
      executor.submit("b", otherKey);
      executor.submit(null, unkeyed);

      List<Runnable> dropped = executor.shutdownNow();
      assertThat(dropped).containsExactlyInAnyOrder(sameKey, otherKey, unkeyed);
      assertThat(executor.awaitTermination(WAIT)).isTrue();
      assertThat(executor.pending()).isZero();
      assertThat(executor.awaitDrained(Duration.ZERO)).isTrue();
    }

    @Test
    @DisplayName("awaitDrained times out while a task runs, without stopping intake")
    void awaitDrainedTimesOut() throws Exception {
      KeyedExecutor executor = executor(1, 8);
      CountDownLatch gate = hold(executor, "a");
      assertThat(executor.awaitDrained(Duration.ofMillis(20))).isFalse();
      assertThat(executor.trySubmit("b", () -> { })).isTrue();
      gate.countDown();
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(executor.isShutdown()).isFalse();
    }
  }

  @Nested
  @DisplayName("under contention")
  class Contention {

    @Test
    @DisplayName("with several submitters racing a close, every accepted task runs exactly once, in order per key")
    void submittersRaceClose() throws Exception {
      KeyedExecutor executor = executor(3, 32);
      int submitters = 4;
      int keys = 8;
      AtomicInteger accepted = new AtomicInteger();
      AtomicInteger ran = new AtomicInteger();
      AtomicInteger outOfOrder = new AtomicInteger();
      // last sequence number seen per (submitter, key); only touched by that key's running task
      int[][] last = new int[submitters][keys];
      AtomicReference<Throwable> error = new AtomicReference<>();
      CountDownLatch stopped = new CountDownLatch(submitters);
      for (int s = 0; s < submitters; s++) {
        int submitter = s;
        new Thread(() -> {
          int seq = 0;
          try {
            while (true) {
              seq++;
              int key = seq % keys;
              int mine = seq;
              Runnable task = () -> {
                int k = mine % keys;
                if (last[submitter][k] >= mine) {
                  outOfOrder.incrementAndGet();
                }
                last[submitter][k] = mine;
                ran.incrementAndGet();
              };
              // mix the three intake paths; key = submitter * keys + key so order is checkable
              boolean ok;
              if (seq % 3 == 0) {
                ok = executor.trySubmit(submitter * keys + key, task);
              } else if (seq % 3 == 1) {
                ok = executor.submit(submitter * keys + key, task, Duration.ofMillis(5));
              } else {
                executor.submit(submitter * keys + key, task);
                ok = true;
              }
              if (ok) {
                accepted.incrementAndGet();
              } else {
                seq--; // not accepted: retry the same sequence number
              }
            }
          } catch (RejectedExecutionException expected) {
            // closed
          } catch (Throwable e) {
            error.set(e);
          } finally {
            stopped.countDown();
          }
        }, "submitter-" + s).start();
      }
      Awaits.until(WAIT, "2000 tasks accepted", () -> accepted.get() >= 2_000);
      assertThat(executor.close(WAIT)).isTrue();
      assertThat(stopped.await(10, TimeUnit.SECONDS)).as("submitters stopped").isTrue();
      assertThat(error.get()).isNull();
      assertThat(ran.get()).isEqualTo(accepted.get());
      assertThat(outOfOrder).hasValue(0);
      assertThat(executor.pending()).isZero();
      assertThat(executor.activeKeys()).isZero();
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("invalid settings are rejected naming the field and value")
    void invalid() {
      assertThatThrownBy(() -> KeyedExecutor.builder().threads(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("threads must be >= 1, was 0");
      assertThatThrownBy(() -> KeyedExecutor.builder().maxQueued(-3).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxQueued must be >= 1, was -3");
      assertThatThrownBy(() -> KeyedExecutor.builder().threadName(" ").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("threadName");
      assertThatThrownBy(() -> KeyedExecutor.builder().failureHandler(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("failureHandler");
    }

    @Test
    @DisplayName("a null task or timeout is rejected")
    void nullArguments() {
      KeyedExecutor executor = executor(1, 1);
      assertThatThrownBy(() -> executor.submit("k", null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("task must not be null");
      assertThatThrownBy(() -> executor.trySubmit("k", null))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> executor.submit("k", () -> { }, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("timeout must not be null");
      assertThat(executor.pending()).isZero();
    }

    @Test
    @DisplayName("workers come from the thread factory and carry the configured name")
    void threadNames() throws Exception {
      KeyedExecutor executor = executor(KeyedExecutor.builder().threads(2).threadName("orders"));
      AtomicReference<String> name = new AtomicReference<>();
      executor.submit("k", () -> name.set(Thread.currentThread().getName()));
      assertThat(executor.awaitDrained(WAIT)).isTrue();
      assertThat(name.get()).matches("orders-[12]");
      assertThat(executor.threads()).isEqualTo(2);
      assertThat(executor.maxQueued()).isEqualTo(1024);
    }
  }
}

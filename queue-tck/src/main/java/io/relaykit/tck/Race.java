package io.relaykit.tck;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

/**
 * Runs the same task on several threads released at the same instant, for concurrency cases of the
 * contract kits: "16 threads claim one key, exactly one wins".
 */
public final class Race {
  private Race() {}

  /**
   * Starts {@code threads} threads, releases them together, and returns each one's result in thread
   * order. Fails if any task throws (with that failure as the cause) or if they do not all finish
   * within {@code timeout}. The threads are daemons of a pool created for this call and
   * interrupted when it returns or fails.
   *
   * @param <T> the type of each task's result
   * @param threads how many threads race, at least 1
   * @param timeout the deadline for all threads to start and finish
   * @param task called once per thread with the thread's index, 0 to {@code threads - 1}
   * @return the results, in index order
   * @throws IllegalArgumentException if {@code threads} is below 1
   * @throws AssertionError if a task throws, the race does not finish in time, or the calling
   *     thread is interrupted
   */
  public static <T> List<T> run(int threads, Duration timeout, IntFunction<T> task) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads must be >= 1, was " + threads);
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "relaykit-tck-race");
      t.setDaemon(true);
      return t;
    });
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<T>> futures = new ArrayList<>(threads);
      for (int i = 0; i < threads; i++) {
        int index = i;
        futures.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return task.apply(index);
        }));
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      if (!ready.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        throw new AssertionError("race threads did not start within " + timeout);
      }
      go.countDown();
      List<T> results = new ArrayList<>(threads);
      for (Future<T> f : futures) {
        long left = Math.max(0, deadline - System.nanoTime());
        results.add(f.get(left, TimeUnit.NANOSECONDS));
      }
      return results;
    } catch (ExecutionException e) {
      throw new AssertionError("a racing task failed: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new AssertionError("racing tasks did not finish within " + timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted during a race", e);
    } finally {
      pool.shutdownNow();
    }
  }
}

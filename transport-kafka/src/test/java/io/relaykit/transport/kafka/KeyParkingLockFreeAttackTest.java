package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.ordering.KeyedExecutor;
import io.relaykit.ordering.OffsetTracker;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Attacks on the lock-free path of {@link KeyParking}: a record whose key is not parked is
 * submitted without the lock, so the key may be parked, filled and released between the check and
 * the submission. The lane (the key's FIFO in the keyed executor) and {@link
 * KeyParking#parkIfHeld} must still keep every record of a key in order, one at a time.
 */
@DisplayName("KeyParking: the lock-free admission under concurrent parks and releases")
class KeyParkingLockFreeAttackTest {

  private final OffsetTracker<TopicPartition> tracker = new OffsetTracker<>();
  private final KeyParking parking = new KeyParking();

  private Work work(String key, long offset) {
    ConsumerRecord<String, byte[]> r = new ConsumerRecord<>("t", 0, offset, key, new byte[0]);
    return new Work(r, tracker.track(new TopicPartition("t", 0), offset), false, key);
  }

  /**
   * A lane as the runtime builds it, driven by hand: submitted tasks run in order when the test
   * says so.
   */
  private static final class Lane {
    final ArrayDeque<Runnable> tasks = new ArrayDeque<>();

    synchronized void add(Runnable task) {
      tasks.add(task);
    }

    void runAll() {
      Runnable next;
      while ((next = poll()) != null) {
        next.run();
      }
    }

    private synchronized Runnable poll() {
      return tasks.poll();
    }
  }

  @Test
  @DisplayName("a key parked, filled with a waiting record and released between the lock-free"
      + " check and the submission: the released record still runs before the later one")
  void parkFillAndReleaseInsideTheCheckWindow() throws Exception {
    Lane lane = new Lane();
    List<Long> ran = new CopyOnWriteArrayList<>();
    Work w1 = work("k", 1); // running in the lane: it will fail
    Work w2 = work("k", 2); // queued in the lane behind w1, admitted before the park
    Work w3 = work("k", 3); // admitted lock-free; its submission is held up
    Consumer<Object> drain = key -> lane.add(() -> {
      Work n;
      while ((n = parking.nextReleased(key)) != null) {
        ran.add(n.record().offset());
      }
    });
    Consumer<Work> laneTask = w -> lane.add(() -> {
      if (!parking.parkIfHeld(w)) {
        ran.add(w.record().offset());
      }
    });
    assertThat(parking.admit(w2, laneTask)).isTrue();

    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      boolean admitted = parking.admit(w3, w -> {
        // Between the check and the submission, on another thread: w1 fails and holds the key,
        // w2 (next in the lane) meets the park and waits, and the retry is refused at once.
        try {
          other.submit(() -> {
            assertThat(parking.holdIf("k", w1, () -> true)).isTrue();
            lane.runAll(); // w2: parked
            assertThat(parking.waiting()).isOne();
            parking.release("k", w1, drain); // a drain task for w2 joins the lane
          }).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        laneTask.accept(w);
      });
      assertThat(admitted).isTrue();
      lane.runAll();
    } finally {
      other.shutdownNow();
    }
    assertThat(ran).containsExactly(2L, 3L);
    assertThat(parking.parkedKeys()).isZero();
    assertThat(parking.waiting()).isZero();
  }

  @Test
  @DisplayName("a key parked by its lane predecessor between the lock-free check and the"
      + " submission: the later record waits in the lane check until the retry finishes")
  void parkInsideTheCheckWindowIsSeenInTheLane() throws Exception {
    Lane lane = new Lane();
    List<Long> ran = new CopyOnWriteArrayList<>();
    Work w1 = work("k", 1);
    Work w3 = work("k", 3);
    Consumer<Work> laneTask = w -> lane.add(() -> {
      if (!parking.parkIfHeld(w)) {
        ran.add(w.record().offset());
      }
    });
    CountDownLatch parked = new CountDownLatch(1);
    Thread failing = new Thread(() -> {
      parking.holdIf("k", w1, () -> true);
      parking.moveHold("k", w1, "copy@7", () -> true, k -> { });
      parked.countDown();
    });
    assertThat(parking.admit(w3, w -> {
      failing.start();
      try {
        assertThat(parked.await(10, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      laneTask.accept(w);
    })).isTrue();
    lane.runAll();
    assertThat(ran).isEmpty();
    assertThat(parking.waiting()).isOne();

    List<Work> drained = new ArrayList<>();
    parking.releaseRetry("k", "copy@7", key -> {
      Work n;
      while ((n = parking.nextReleased(key)) != null) {
        drained.add(n);
      }
    });
    assertThat(drained).containsExactly(w3);
    assertThat(parking.parkedKeys()).isZero();
  }

  @Test
  @DisplayName("many keys, workers and failures: no record of a key starts before the earlier"
      + " records of its key succeeded, and no two records of a key run at once")
  void stressKeepsKeyOrder() throws Exception {
    int keys = 32;
    int perKey = 200;
    int threads = 16;
    KeyedExecutor lanes = KeyedExecutor.builder().threads(threads)
        .maxQueued(4 * keys * perKey).build();
    ExecutorService copies = Executors.newFixedThreadPool(3);
    Map<Object, AtomicInteger> running = new ConcurrentHashMap<>();
    Map<Object, List<Long>> succeeded = new ConcurrentHashMap<>();
    List<String> violations = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger done = new AtomicInteger();
    SplittableRandom seeds = new SplittableRandom(38);
    Map<Long, Integer> failuresLeft = new ConcurrentHashMap<>();
    Map<Long, Integer> indexInKey = new ConcurrentHashMap<>();
    try {
      class Runtime {
        void submit(Work w) {
          lanes.trySubmit(w.gateKey(), () -> {
            if (!parking.parkIfHeld(w)) {
              process(w, false);
            }
          });
        }

        void drain(Object key) {
          lanes.trySubmit(key, () -> {
            Work n;
            while ((n = parking.nextReleased(key)) != null) {
              process(n, false);
            }
          });
        }

        void process(Work w, boolean retry) {
          Object key = w.gateKey();
          long offset = w.record().offset();
          if (running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() != 1) {
            violations.add("two records of " + key + " at once at " + offset);
          }
          List<Long> ok = succeeded.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>());
          int index = indexInKey.get(offset);
          if (ok.size() != index) {
            violations.add(key + "@" + offset + " (its record " + index + ") started after "
                + ok.size() + " of the key's records succeeded");
          }
          Thread.onSpinWait();
          boolean fail = failuresLeft.merge(offset, -1, Integer::sum) >= 0;
          running.get(key).decrementAndGet();
          if (!fail) {
            ok.add(offset);
            done.incrementAndGet();
            if (retry) {
              parking.releaseRetry(key, "copy@" + offset, this::drain);
            }
            return;
          }
          if (retry) {
            // failed again: the retry's hold moves to a new copy before it is released
            parking.hold(key, "copy2@" + offset);
            parking.releaseRetry(key, "copy@" + offset, this::drain);
            copies.execute(() -> {
              parking.moveHold(key, "copy2@" + offset, "copy@" + offset, () -> true,
                  this::drain);
              lanes.trySubmit(key, () -> process(w, true));
            });
            return;
          }
          parking.holdIf(key, w, () -> true);
          copies.execute(() -> {
            parking.moveHold(key, w, "copy@" + offset, () -> true, this::drain);
            lanes.trySubmit(key, () -> process(w, true)); // the copy, read back
          });
        }
      }
      Runtime rt = new Runtime();
      long offset = 0;
      for (int i = 0; i < perKey; i++) {
        for (int k = 0; k < keys; k++) {
          long at = offset++;
          int r = seeds.nextInt(100);
          failuresLeft.put(at, r < 5 ? 1 : r < 7 ? 2 : 0);
          indexInKey.put(at, i);
          Work w = work("k" + k, at);
          parking.admit(w, rt::submit); // the poll thread: lock-free for unparked keys
        }
      }
      Await.until(Duration.ofSeconds(60), "every record succeeded, or an order violation",
          () -> done.get() == keys * perKey || !violations.isEmpty());
      assertThat(violations).isEmpty();
      assertThat(done.get()).isEqualTo(keys * perKey);
      assertThat(parking.parkedKeys()).isZero();
      assertThat(parking.waiting()).isZero();
    } finally {
      copies.shutdownNow();
      lanes.shutdownNow();
      lanes.awaitTermination(Duration.ofSeconds(10));
    }
  }
}

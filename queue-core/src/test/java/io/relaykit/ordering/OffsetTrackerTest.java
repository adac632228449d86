package io.relaykit.ordering;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.testing.TestClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class OffsetTrackerTest {

  private final TestClock clock = new TestClock();
  private final OffsetTracker<String> tracker = new OffsetTracker<>(clock);

  @Nested
  @DisplayName("committable offset")
  class Committable {

    @Test
    @DisplayName("is empty for a partition that never tracked anything")
    void emptyWhenNeverTracked() {
      assertThat(tracker.committable("p0")).isEmpty();
      assertThat(tracker.committableOffsets()).isEmpty();
    }

    @Test
    @DisplayName("is the lowest incomplete offset while records are in flight")
    void lowestIncomplete() {
      tracker.track("p0", 10);
      tracker.track("p0", 11);
      tracker.track("p0", 12);
      assertThat(tracker.committable("p0")).hasValue(10);

      tracker.complete("p0", 11);
      assertThat(tracker.committable("p0")).hasValue(10);
      tracker.complete("p0", 10);
      assertThat(tracker.committable("p0")).hasValue(12);
    }

    @Test
    @DisplayName("is one past the highest tracked offset when every record is complete")
    void onePastHighest() {
      tracker.track("p0", 5);
      tracker.track("p0", 6);
      tracker.complete("p0", 6);
      tracker.complete("p0", 5);
      assertThat(tracker.committable("p0")).hasValue(7);
      assertThat(tracker.inFlight("p0")).isZero();
    }

    @Test
    @DisplayName("skips over gaps between offsets (compaction, transaction markers)")
    void gaps() {
      tracker.track("p0", 3);
      tracker.track("p0", 1_000_000);
      tracker.track("p0", Long.MAX_VALUE - 1);
      tracker.complete("p0", 3);
      assertThat(tracker.committable("p0")).hasValue(1_000_000);
      tracker.complete("p0", 1_000_000);
      assertThat(tracker.committable("p0")).hasValue(Long.MAX_VALUE - 1);
      tracker.complete("p0", Long.MAX_VALUE - 1);
      assertThat(tracker.committable("p0")).hasValue(Long.MAX_VALUE);
    }

    @Test
    @DisplayName("is kept per partition")
    void perPartition() {
      tracker.track("a", 1);
      tracker.track("a", 2);
      tracker.track("b", 100);
      tracker.complete("a", 1);
      assertThat(tracker.committable("a")).hasValue(2);
      assertThat(tracker.committable("b")).hasValue(100);
      assertThat(tracker.committableOffsets()).containsOnly(Map.entry("a", 2L), Map.entry("b", 100L));
      assertThat(tracker.inFlight()).isEqualTo(2);
      assertThat(tracker.inFlight("a")).isEqualTo(1);
      assertThat(tracker.inFlight("b")).isEqualTo(1);
      assertThat(tracker.inFlight("c")).isZero();
    }

    @Test
    @DisplayName("matches a brute-force model under random out-of-order completion, and never goes back")
    void matchesModel() {
      Random random = new Random(42);
      TreeSet<Long> model = new TreeSet<>();
      List<Long> open = new ArrayList<>();
      long next = 0;
      long highest = -1;
      long lastCommittable = -1;
      for (int step = 0; step < 5_000; step++) {
        if (open.isEmpty() || random.nextInt(100) < 55) {
          next += 1 + (random.nextInt(10) == 0 ? random.nextInt(1000) : 0);
          tracker.track("p", next);
          model.add(next);
          open.add(next);
          highest = next;
        } else {
          long offset = open.remove(random.nextInt(open.size()));
          assertThat(tracker.complete("p", offset)).isTrue();
          model.remove(offset);
        }
        long expected = model.isEmpty() ? highest + 1 : model.first();
        long actual = tracker.committable("p").orElseThrow();
        assertThat(actual).isEqualTo(expected).isGreaterThanOrEqualTo(lastCommittable);
        assertThat(tracker.inFlight("p")).isEqualTo(model.size());
        lastCommittable = actual;
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a duplicate offset is rejected, naming it")
    void duplicate() {
      tracker.track("p0", 7);
      assertThatThrownBy(() -> tracker.track("p0", 7))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 7")
          .hasMessageContaining("p0")
          .hasMessageContaining("already in flight");
      assertThat(tracker.inFlight()).isEqualTo(1);
    }

    @Test
    @DisplayName("an offset lower than one already tracked is rejected, even if that one completed")
    void lower() {
      tracker.track("p0", 7);
      tracker.complete("p0", 7);
      assertThatThrownBy(() -> tracker.track("p0", 7))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 7")
          .hasMessageContaining("highest tracked offset 7");
      assertThatThrownBy(() -> tracker.track("p0", 3))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 3");
      assertThat(tracker.committable("p0")).hasValue(8);
    }

    @Test
    @DisplayName("a negative offset and a null partition are rejected")
    void negativeAndNull() {
      assertThatThrownBy(() -> tracker.track("p0", -1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("offset must be >= 0, was -1");
      assertThatThrownBy(() -> tracker.track(null, 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("partition must not be null");
      assertThatThrownBy(() -> tracker.complete(null, 1))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> tracker.committable(null))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> tracker.complete((OffsetTracker.Ticket<String>) null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("ticket must not be null");
      assertThat(tracker.inFlight()).isZero();
    }

    @Test
    @DisplayName("completing an unknown offset of a tracked partition is rejected, naming it")
    void unknown() {
      tracker.track("p0", 5);
      tracker.track("p0", 9);
      assertThatThrownBy(() -> tracker.complete("p0", 7))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 7 of partition p0 is not in flight");
      assertThatThrownBy(() -> tracker.complete("p0", 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 10 of partition p0 was never tracked");
      assertThat(tracker.committable("p0")).hasValue(5);
      assertThat(tracker.inFlight()).isEqualTo(2);
    }

    @Test
    @DisplayName("completing twice is rejected, by offset and by ticket")
    void twice() {
      OffsetTracker.Ticket<String> ticket = tracker.track("p0", 5);
      tracker.track("p0", 6);
      assertThat(tracker.complete(ticket)).isTrue();
      assertThatThrownBy(() -> tracker.complete(ticket))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 5");
      assertThatThrownBy(() -> tracker.complete("p0", 5))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("offset 5");
      assertThat(tracker.committable("p0")).hasValue(6);
      assertThat(tracker.inFlight()).isEqualTo(1);
    }

    @Test
    @DisplayName("a ticket from another tracker is rejected")
    void foreignTicket() {
      OffsetTracker<String> other = new OffsetTracker<>(clock);
      OffsetTracker.Ticket<String> foreign = other.track("p0", 1);
      tracker.track("p0", 1);
      assertThatThrownBy(() -> tracker.complete(foreign))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("not issued by this tracker");
      assertThat(tracker.committable("p0")).hasValue(1);
      assertThat(other.committable("p0")).hasValue(1);
    }
  }

  @Nested
  @DisplayName("revocation")
  class Revocation {

    @Test
    @DisplayName("drops the partition's state and reports how many records were in flight")
    void dropsState() {
      tracker.track("p0", 1);
      tracker.track("p0", 2);
      tracker.track("p1", 1);
      tracker.complete("p0", 1);
      assertThat(tracker.revoke("p0")).isEqualTo(1);
      assertThat(tracker.committable("p0")).isEmpty();
      assertThat(tracker.inFlight("p0")).isZero();
      assertThat(tracker.inFlight()).isEqualTo(1);
      assertThat(tracker.committableOffsets()).containsOnlyKeys("p1");
      assertThat(tracker.revoke("p0")).isZero();
      assertThat(tracker.revoke("never")).isZero();
    }

    @Test
    @DisplayName("late completions are ignored and reported as false, not thrown")
    void lateCompletions() {
      OffsetTracker.Ticket<String> ticket = tracker.track("p0", 1);
      tracker.track("p0", 2);
      tracker.revoke("p0");
      assertThat(tracker.complete(ticket)).isFalse();
      assertThat(tracker.complete("p0", 2)).isFalse();
      assertThat(tracker.complete("never-tracked", 2)).isFalse();
      assertThat(tracker.inFlight()).isZero();
    }

    @Test
    @DisplayName("a reassigned partition starts afresh, and an old ticket cannot complete the new record")
    void reassigned() {
      OffsetTracker.Ticket<String> old = tracker.track("p0", 10);
      tracker.track("p0", 11);
      tracker.revoke("p0");

      OffsetTracker.Ticket<String> fresh = tracker.track("p0", 10);
      assertThat(tracker.complete(old)).isFalse();
      assertThat(tracker.committable("p0")).hasValue(10);
      assertThat(tracker.inFlight()).isEqualTo(1);

      assertThat(tracker.complete(fresh)).isTrue();
      assertThat(tracker.committable("p0")).hasValue(11);
    }

    @Test
    @DisplayName("a ticket stays current until its partition is revoked, and a reassignment does"
        + " not make it current again")
    void currentUntilRevoked() {
      OffsetTracker.Ticket<String> old = tracker.track("p0", 1);
      OffsetTracker.Ticket<String> other = tracker.track("p1", 1);
      assertThat(tracker.isCurrent(old)).isTrue();
      tracker.complete(other);
      assertThat(tracker.isCurrent(other)).as("completion is not revocation").isTrue();

      tracker.revoke("p0");
      OffsetTracker.Ticket<String> fresh = tracker.track("p0", 1);

      assertThat(tracker.isCurrent(old)).isFalse();
      assertThat(tracker.isCurrent(fresh)).isTrue();
      assertThat(tracker.isCurrent(other)).isTrue();
      assertThatThrownBy(() -> tracker.isCurrent(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ticket");
    }
  }

  @Nested
  @DisplayName("oldest in-flight age")
  class OldestAge {

    @Test
    @DisplayName("is the time since the oldest incomplete record was tracked")
    void oldest() {
      assertThat(tracker.oldestInFlightAge()).isEmpty();
      tracker.track("a", 1);
      clock.advance(Duration.ofSeconds(3));
      tracker.track("b", 1);
      tracker.track("a", 2);
      clock.advance(Duration.ofSeconds(2));

      assertThat(tracker.oldestInFlightAge()).hasValue(Duration.ofSeconds(5));
      assertThat(tracker.oldestInFlightAge("b")).hasValue(Duration.ofSeconds(2));

      tracker.complete("a", 1);
      assertThat(tracker.oldestInFlightAge()).hasValue(Duration.ofSeconds(2));
      assertThat(tracker.oldestInFlightAge("a")).hasValue(Duration.ofSeconds(2));

      tracker.complete("a", 2);
      tracker.revoke("b");
      assertThat(tracker.oldestInFlightAge()).isEmpty();
      assertThat(tracker.oldestInFlightAge("a")).isEmpty();
      assertThat(tracker.oldestInFlightAge("b")).isEmpty();
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("a poll thread tracking and workers completing in any order end at one past the highest offset")
    void pollAndWorkers() throws Exception {
      OffsetTracker<Integer> shared = new OffsetTracker<>(clock);
      int partitions = 4;
      int perPartition = 5_000;
      BlockingQueue<List<OffsetTracker.Ticket<Integer>>> work = new ArrayBlockingQueue<>(256);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      int workers = 4;
      CountDownLatch done = new CountDownLatch(workers);
      for (int w = 0; w < workers; w++) {
        Thread t = new Thread(() -> {
          try {
            List<OffsetTracker.Ticket<Integer>> batch = new ArrayList<>();
            while (true) {
              List<OffsetTracker.Ticket<Integer>> item = work.take();
              if (item.isEmpty()) { // poison pill
                break;
              }
              batch.add(item.get(0));
              if (batch.size() == 8) { // complete out of order
                Collections.shuffle(batch);
                for (OffsetTracker.Ticket<Integer> b : batch) {
                  if (!shared.complete(b)) {
                    throw new AssertionError("completion ignored: " + b);
                  }
                }
                batch.clear();
              }
            }
            for (OffsetTracker.Ticket<Integer> b : batch) {
              shared.complete(b);
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          } finally {
            done.countDown();
          }
        }, "offset-worker-" + w);
        t.start();
      }

      long[] lastCommitted = new long[partitions];
      for (int i = 0; i < perPartition; i++) {
        for (int p = 0; p < partitions; p++) {
          long offset = 2L * i; // gaps of one
          OffsetTracker.Ticket<Integer> ticket = shared.track(p, offset);
          long committable = shared.committable(p).orElseThrow();
          assertThat(committable).isBetween(lastCommitted[p], offset);
          lastCommitted[p] = committable;
          work.put(List.of(ticket));
        }
      }
      for (int w = 0; w < workers; w++) {
        work.put(List.of());
      }
      assertThat(done.await(30, TimeUnit.SECONDS)).as("workers finished").isTrue();
      assertThat(failure.get()).isNull();
      assertThat(shared.inFlight()).isZero();
      for (int p = 0; p < partitions; p++) {
        assertThat(shared.committable(p)).hasValue(2L * (perPartition - 1) + 1);
      }
    }
  }

  @Nested
  @DisplayName("revocation under contention")
  class RevokeRace {

    @Test
    @DisplayName("completions racing a revoke are either counted or reported false, and the in-flight total stays exact")
    void completesRaceRevoke() throws Exception {
      for (int round = 0; round < 20; round++) {
        OffsetTracker<String> t = new OffsetTracker<>(clock);
        int n = 2_000;
        List<OffsetTracker.Ticket<String>> tickets = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          tickets.add(t.track("p", i));
        }
        t.track("other", 0);
        AtomicInteger completed =
            new AtomicInteger();
        AtomicInteger ignored =
            new AtomicInteger();
        AtomicReference<Throwable> error = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(2);
        for (int w = 0; w < 2; w++) {
          int from = w;
          new Thread(() -> {
            try {
              start.await();
              for (int i = from; i < n; i += 2) {
                if (t.complete(tickets.get(i))) {
                  completed.incrementAndGet();
                } else {
                  ignored.incrementAndGet();
                }
              }
            } catch (Throwable e) {
              error.compareAndSet(null, e);
            } finally {
              done.countDown();
            }
          }).start();
        }
        start.countDown();
        int dropped = t.revoke("p");
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(error.get()).as("no completion may throw").isNull();
        assertThat(completed.get() + dropped).isEqualTo(n);
        assertThat(ignored.get()).isEqualTo(dropped);
        assertThat(t.inFlight()).isEqualTo(1);
        assertThat(t.inFlight("p")).isZero();
        assertThat(t.committable("p")).isEmpty();
      }
    }
  }

  @Test
  @DisplayName("committable stays empty for an unknown partition while others progress")
  void unknownPartitionStaysEmpty() {
    tracker.track("p0", 0);
    OptionalLong none = tracker.committable("p9");
    assertThat(none).isEmpty();
  }

  @Test
  @DisplayName("pending: the position, the end of what was tracked and the incomplete offsets;"
      + " empty when untracked or revoked")
  void pendingNamesWhatThePositionLeavesOut() {
    assertThat(tracker.pending("p")).isEmpty();
    var a = tracker.track("p", 10);
    tracker.track("p", 11);
    var b = tracker.track("p", 12);
    var c = tracker.track("p", 14);
    var d = tracker.track("p", 15);
    tracker.complete(b);
    tracker.complete(c);
    OffsetTracker.Pending p = tracker.pending("p").orElseThrow();
    assertThat(p.committable()).isEqualTo(10);
    assertThat(p.end()).isEqualTo(16);
    assertThat(p.incomplete()).containsExactly(10, 11, 15);
    tracker.complete(a);
    tracker.complete(d);
    assertThat(tracker.pending("p").orElseThrow().incomplete()).containsExactly(11);
    tracker.revoke("p");
    assertThat(tracker.pending("p")).isEmpty();
  }
}

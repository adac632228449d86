package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.ordering.OffsetTracker;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KeyParking: holds that move from a failed record to its retry copy")
class KeyParkingTest {

  private final OffsetTracker<TopicPartition> tracker = new OffsetTracker<>();
  private final KeyParking parking = new KeyParking();
  private final List<Work> submitted = new ArrayList<>();
  /** Runs a drain at once, as the key's lane would, collecting what it runs. */
  private final java.util.function.Consumer<Object> drainNow = key -> {
    Work w;
    while ((w = parking.nextReleased(key)) != null) {
      submitted.add(w);
    }
  };

  private Work work(String topic, long offset) {
    ConsumerRecord<String, byte[]> r = new ConsumerRecord<>(topic, 0, offset, "k", new byte[0]);
    return new Work(r, tracker.track(new TopicPartition(topic, 0), offset), false, "k");
  }

  @Test
  @DisplayName("a retry copy finished before the producer callback moved the hold onto it: the"
      + " move releases the key instead of installing a hold nobody releases")
  void copyFinishedBeforeTheHoldMoved() {
    Work failed = work("t", 0);
    Work later = work("t", 1);
    parking.hold("k", failed);
    assertThat(parking.admit(later, submitted::add)).isFalse();
    Object copy = List.of("t.retry-0", 7L); // any value with equals: the copy's position

    parking.releaseRetry("k", copy, drainNow); // the consumer was faster
    parking.moveHold("k", failed, copy, () -> true, drainNow); // the callback comes late

    assertThat(parking.parkedKeys()).isZero();
    assertThat(submitted).containsExactly(later);
  }

  @Test
  @DisplayName("a retry copy on a partition this member does not own releases the key at once")
  void copyOnAForeignPartitionReleasesTheKey() {
    Work failed = work("t", 0);
    Work later = work("t", 1);
    parking.hold("k", failed);
    parking.admit(later, submitted::add);

    parking.moveHold("k", failed, List.of("t.retry-1", 3L), () -> false, drainNow);

    assertThat(parking.parkedKeys()).isZero();
    assertThat(submitted).containsExactly(later);
  }

  @Test
  @DisplayName("a copy this member will fetch keeps the key parked until it finishes")
  void ownedCopyKeepsTheKeyParked() {
    Work failed = work("t", 0);
    Work later = work("t", 1);
    Object copy = List.of("t.retry-0", 3L);
    parking.hold("k", failed);
    parking.admit(later, submitted::add);

    parking.moveHold("k", failed, copy, () -> true, drainNow);
    assertThat(parking.parkedKeys()).isOne();
    assertThat(submitted).isEmpty();

    parking.releaseRetry("k", copy, drainNow);
    assertThat(parking.parkedKeys()).isZero();
    assertThat(submitted).containsExactly(later);
  }

  @Test
  @DisplayName("a record queued in the key's lane before the release does not overtake the"
      + " released records: it finds the key still parked and runs after them (rebalance kit,"
      + " cooperative-sticky, seed 57154175597)")
  void laneQueuedRecordDoesNotOvertakeReleasedOnes() {
    Work failed = work("t", 0);
    Work parkedInLane = work("t", 1);
    Work queuedInLane = work("t", 2);
    parking.hold("k", failed);
    assertThat(parking.parkIfHeld(parkedInLane)).isTrue(); // ran in the lane after the hold
    List<Object> drains = new ArrayList<>();
    parking.release("k", failed, drains::add); // a drain task is queued behind queuedInLane
    assertThat(drains).containsExactly("k");

    assertThat(parking.parkIfHeld(queuedInLane)).as("the key is still draining").isTrue();
    drainNow.accept("k");
    assertThat(submitted).containsExactly(parkedInLane, queuedInLane);
    assertThat(parking.parkedKeys()).isZero();
    assertThat(parking.waiting()).isZero();
  }

  @Test
  @DisplayName("a record of a key that is not parked is admitted and passes the lane check without"
      + " the lock, while another key is parked and the lock is held; the parked key's record"
      + " still waits")
  void unparkedKeyTakesNoLock() throws Exception {
    Work failed = work("t", 0);
    parking.hold("k", failed);
    ConsumerRecord<String, byte[]> r = new ConsumerRecord<>("t", 0, 1, "other", new byte[0]);
    Work other = new Work(r, tracker.track(new TopicPartition("t", 0), 1), false, "other");
    Work later = work("t", 2);
    java.util.concurrent.CountDownLatch locked = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch unlock = new java.util.concurrent.CountDownLatch(1);
    Thread holder = new Thread(() -> {
      synchronized (parking) {
        locked.countDown();
        try {
          unlock.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    holder.start();
    java.util.concurrent.ExecutorService caller =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      assertThat(locked.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      var unparked = caller.submit(() -> List.of(parking.admit(other, submitted::add),
          parking.parkIfHeld(other)));
      assertThat(unparked.get(10, java.util.concurrent.TimeUnit.SECONDS))
          .as("admitted, and not parked in the lane").containsExactly(true, false);
      assertThat(submitted).containsExactly(other);

      var parked = caller.submit(() -> parking.admit(later, submitted::add));
      unlock.countDown();
      assertThat(parked.get(10, java.util.concurrent.TimeUnit.SECONDS)).isFalse();
      assertThat(submitted).containsExactly(other);
      assertThat(parking.waiting()).isOne();
    } finally {
      unlock.countDown();
      caller.shutdownNow();
      holder.join(10_000);
    }
  }

  @Test
  @DisplayName("a drained record that fails holds the key again: the drain stops, the rest wait for"
      + " the next release")
  void drainStopsWhenTheKeyIsHeldAgain() {
    Work failed = work("t", 0);
    Work first = work("t", 1);
    Work second = work("t", 2);
    parking.hold("k", failed);
    parking.admit(first, submitted::add);
    parking.admit(second, submitted::add);
    List<Object> drains = new ArrayList<>();
    parking.release("k", failed, drains::add);

    assertThat(parking.nextReleased("k")).isSameAs(first);
    parking.hold("k", first); // first fails
    assertThat(parking.nextReleased("k")).isNull();
    assertThat(parking.waiting()).isOne();
    parking.release("k", first, drains::add);
    assertThat(drains).containsExactly("k", "k");
    assertThat(parking.nextReleased("k")).isSameAs(second);
    assertThat(parking.nextReleased("k")).isNull();
    assertThat(parking.parkedKeys()).isZero();
  }
}

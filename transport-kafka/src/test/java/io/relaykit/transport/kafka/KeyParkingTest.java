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

    parking.releaseRetry("k", copy, submitted::add); // the consumer was faster
    parking.moveHold("k", failed, copy, () -> true, submitted::add); // the callback comes late

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

    parking.moveHold("k", failed, List.of("t.retry-1", 3L), () -> false, submitted::add);

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

    parking.moveHold("k", failed, copy, () -> true, submitted::add);
    assertThat(parking.parkedKeys()).isOne();
    assertThat(submitted).isEmpty();

    parking.releaseRetry("k", copy, submitted::add);
    assertThat(parking.parkedKeys()).isZero();
    assertThat(submitted).containsExactly(later);
  }
}

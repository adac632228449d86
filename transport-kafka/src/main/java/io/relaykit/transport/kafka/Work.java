package io.relaykit.transport.kafka;

import io.relaykit.ordering.OffsetTracker;
import java.util.Comparator;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * One fetched record on its way through the runtime: the record, its ticket in the offset tracker,
 * whether it came from the retry topic, and the key that orders it (null when unordered).
 */
final class Work {

  /** Partition, then offset: the order in which waiting records of a key are released. */
  static final Comparator<Work> ORDER = Comparator
      .comparing((Work w) -> w.partition.topic())
      .thenComparingInt(w -> w.partition.partition())
      .thenComparingLong(w -> w.record.offset());

  private final ConsumerRecord<String, byte[]> record;
  private final TopicPartition partition;
  private final OffsetTracker.Ticket<TopicPartition> ticket;
  private final boolean fromRetryTopic;
  private final Object gateKey;
  private String position; // built on first use; a racy repeat builds an equal string

  Work(ConsumerRecord<String, byte[]> record, OffsetTracker.Ticket<TopicPartition> ticket,
      boolean fromRetryTopic, Object gateKey) {
    this.record = record;
    this.partition = new TopicPartition(record.topic(), record.partition());
    this.ticket = ticket;
    this.fromRetryTopic = fromRetryTopic;
    this.gateKey = gateKey;
  }

  ConsumerRecord<String, byte[]> record() {
    return record;
  }

  TopicPartition partition() {
    return partition;
  }

  OffsetTracker.Ticket<TopicPartition> ticket() {
    return ticket;
  }

  boolean fromRetryTopic() {
    return fromRetryTopic;
  }

  /** The ordering key: the record key (KEY), the source partition (PARTITION), or null. */
  Object gateKey() {
    return gateKey;
  }

  /** {@code topic-partition@offset}. */
  String position() {
    String p = position;
    if (p == null) {
      p = KafkaRecords.position(record.topic(), record.partition(), record.offset());
      position = p;
    }
    return p;
  }

  @Override
  public String toString() {
    return "Work[" + position() + (fromRetryTopic ? ", retry" : "") + "]";
  }
}

package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.ordering.OffsetTracker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@link TransactionalCopies} on the real broker: when a transaction commits, and what an abort
 * leaves (nothing visible to read_committed readers, no offset) and that the next transaction
 * works. The abort is real: the broker refuses the transaction's offset commit for a group
 * generation that does not exist (what a member that missed a rebalance sends).
 */
@DisplayName("TransactionalCopies: commit rule and abort on a real broker")
class TransactionalCopiesTest {

  /** A committer over a fixed watermark, recording what was committed. */
  private static final class FixedWatermark implements TransactionalCopies.Committer {
    final Map<TopicPartition, Long> watermark = new HashMap<>();
    final Map<TopicPartition, OffsetAndMetadata> plain = new HashMap<>();
    final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
    ConsumerGroupMetadata group;

    @Override
    public Map<TopicPartition, OffsetAndMetadata> offsets() {
      Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
      watermark.forEach((tp, o) -> {
        if (committed.get(tp) == null || committed.get(tp).offset() != o) {
          out.put(tp, new OffsetAndMetadata(o));
        }
      });
      return out;
    }

    @Override
    public boolean passed(TopicPartition tp, long offset) {
      return watermark.getOrDefault(tp, 0L) > offset;
    }

    @Override
    public ConsumerGroupMetadata groupMetadata() {
      return group;
    }

    @Override
    public void commitPlain(Map<TopicPartition, OffsetAndMetadata> offsets) {
      plain.putAll(offsets);
    }

    @Override
    public void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
      committed.putAll(offsets);
    }

    int aborts;

    @Override
    public void aborted() {
      aborts++;
    }

    @Override
    public void fenced() {
      throw new AssertionError("fenced");
    }
  }

  private static Work work(String topic, long offset) {
    OffsetTracker<TopicPartition> tracker = new OffsetTracker<>();
    TopicPartition tp = new TopicPartition(topic, 0);
    return new Work(new ConsumerRecord<>(topic, 0, offset, "k", new byte[0]),
        tracker.track(tp, offset), false, "k");
  }

  /**
   * The committed records of {@code topic}, once at least {@code atLeast} are visible (the commit
   * markers are written after {@code commitTransaction} returns).
   */
  private static List<String> readCommitted(String topic, int atLeast) {
    try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestBroker.bootstrapServers(),
        ConsumerConfig.CLIENT_ID_CONFIG, "tx-reader-" + UUID.randomUUID(),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"),
        new StringDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      List<String> out = new ArrayList<>();
      io.relaykit.tck.Await.until(Duration.ofSeconds(30), atLeast + " records on " + topic, () -> {
        c.poll(Duration.ofMillis(50))
            .forEach(r -> out.add(new String(r.value(), StandardCharsets.UTF_8)));
        return out.size() >= atLeast && c.position(tp) >= c.endOffsets(List.of(tp)).get(tp);
      });
      return out;
    }
  }

  private static ProducerRecord<String, byte[]> copy(String topic, String text) {
    return new ProducerRecord<>(topic, 0, "k", text.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("stays open until the watermark passes its copy, then commits copy and offsets;"
      + " an abort leaves nothing visible and the next transaction commits; a forced commit"
      + " (revoke, close) aborts unless the watermark passed")
  void commitRuleAndAbort() throws Exception {
    String source = newTopic("txsrc", 1);
    String copies = newTopic("txcopies", 1);
    String group = source + "-g";
    TopicPartition tp = new TopicPartition(source, 0);
    KafkaTransportConfig config = KafkaTestSupport.config().memberId("t1")
        .handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL).build();
    TransactionalCopies txn = new TransactionalCopies(config,
        TransactionalCopies.transactionalId(config, source, group));
    try {
      FixedWatermark c = new FixedWatermark();
      c.group = new ConsumerGroupMetadata(group);

      // No transaction: offsets go the plain way.
      c.watermark.put(tp, 1L);
      assertThat(txn.commit(c, false)).isEqualTo(TransactionalCopies.Result.NONE_OPEN);
      assertThat(c.plain).containsEntry(tp, new OffsetAndMetadata(1));

      // A copy of record 3: open until the watermark passes 3.
      txn.send(work(source, 3), copy(copies, "first"), "first", () -> true)
          .get(30, TimeUnit.SECONDS);
      assertThat(txn.isOpen()).isTrue();
      c.watermark.put(tp, 3L);
      assertThat(txn.commit(c, false)).isEqualTo(TransactionalCopies.Result.KEPT_OPEN);
      assertThat(readCommitted(copies, 0)).isEmpty();
      c.watermark.put(tp, 4L);
      assertThat(txn.commit(c, false)).isEqualTo(TransactionalCopies.Result.COMMITTED);
      assertThat(readCommitted(copies, 1)).containsExactly("first");
      assertThat(KafkaTestSupport.committedOffsets(group, source)).containsEntry(0, 4L);

      // A member of a generation the group never had: the broker refuses the transaction's
      // offsets, the transaction aborts, its copy is never visible and no offset moves.
      txn.send(work(source, 5), copy(copies, "aborted"), "aborted", () -> true)
          .get(30, TimeUnit.SECONDS);
      c.watermark.put(tp, 6L);
      c.group = new ConsumerGroupMetadata(group, 7, "no-such-member", Optional.empty());
      assertThat(txn.commit(c, false)).isEqualTo(TransactionalCopies.Result.ABORTED);
      assertThat(c.aborts).as("the runtime told, to rewind").isEqualTo(1);
      assertThat(txn.isOpen()).isFalse();
      assertThat(readCommitted(copies, 1)).containsExactly("first");
      assertThat(KafkaTestSupport.committedOffsets(group, source)).containsEntry(0, 4L);

      // Stale work (the runtime's check fails under the lock) joins no transaction.
      assertThat(txn.send(work(source, 6), copy(copies, "stale"), "stale", () -> false))
          .isCompletedExceptionally();
      assertThat(txn.isOpen()).isFalse();

      // The next transaction works.
      c.group = new ConsumerGroupMetadata(group);
      c.committed.clear();
      txn.send(work(source, 6), copy(copies, "second"), "second", () -> true)
          .get(30, TimeUnit.SECONDS);
      c.watermark.put(tp, 7L);
      assertThat(txn.commit(c, false)).isEqualTo(TransactionalCopies.Result.COMMITTED);
      // The aborted copy lies between them on the topic, and is skipped.
      assertThat(readCommitted(copies, 2)).containsExactly("first", "second");
      assertThat(KafkaTestSupport.committedOffsets(group, source)).containsEntry(0, 7L);

      // Revoke or close (force) before the watermark passed the copy: aborted, not committed,
      // so the next owner's re-run of record 8 finds no copy of it.
      txn.send(work(source, 8), copy(copies, "revoked"), "revoked", () -> true)
          .get(30, TimeUnit.SECONDS);
      c.watermark.put(tp, 8L);
      assertThat(txn.commit(c, true)).isEqualTo(TransactionalCopies.Result.ABORTED);
      assertThat(c.aborts).isEqualTo(2);
      txn.send(work(source, 9), copy(copies, "third"), "third", () -> true)
          .get(30, TimeUnit.SECONDS);
      c.watermark.put(tp, 10L);
      assertThat(txn.commit(c, true)).isEqualTo(TransactionalCopies.Result.COMMITTED);
      assertThat(readCommitted(copies, 3)).containsExactly("first", "second", "third");
      assertThat(KafkaTestSupport.committedOffsets(group, source)).containsEntry(0, 10L);
    } finally {
      txn.close(Duration.ofSeconds(5));
    }
  }
}

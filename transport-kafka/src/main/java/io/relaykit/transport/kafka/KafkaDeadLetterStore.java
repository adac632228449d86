package io.relaykit.transport.kafka;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterHeaders;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A {@link DeadLetterStore} view over one dead-letter topic (as written by {@link
 * KafkaSubscriber}): list, filter, count, find, add, and {@link #replay} into the consumer group's
 * retry path (a dead-letter topic belongs to one group: replaying to the shared source topic would
 * make every group handle the message again).
 *
 * <p>Each dead letter is the original record (key, value, headers) plus relaykit's failure
 * headers: reason, exception class and message, attempts, first and last failure time, source
 * topic and source position. A record that could not be decoded is shown with a stand-in message:
 * id {@code dlt:<topic>-<partition>@<offset>} (its position in the source topic), type {@value
 * #UNDECODABLE_TYPE}, its raw key and value, and its non-relaykit headers; replay resends its raw
 * record unchanged.
 *
 * <p>Unsupported: {@link #remove} and {@link #purge} throw {@link UnsupportedOperationException}:
 * a Kafka topic cannot delete one record, and a marker written by two callers at once cannot make
 * removal at-most-once. Use {@link #replay}, which resends and then appends a replay marker that
 * hides the entry; replaying an id a second time finds nothing and resends nothing. Two callers
 * replaying the same id at the same moment may both resend it (consumers deduplicate by message
 * id).
 *
 * <p><b>Retention is the broker's.</b> Set {@code retention.ms} (or {@code retention.bytes}) on the
 * dead-letter topic; this store removes nothing by age or count: {@link #purgeFailedBefore},
 * {@link #purgeFailedOlderThan} and {@link #trimTo} throw {@link UnsupportedOperationException},
 * so a relay's retention schedule cannot apply to it, and no caller's clock decides anything here.
 * The broker deletes whole log segments once the newest record timestamp in a segment is older
 * than {@code retention.ms} by the broker's clock. Which timestamp that is depends on the topic's
 * {@code message.timestamp.type}: with Kafka's default {@code CreateTime} it is the time the
 * dead-lettering consumer's host stamped on the copy (so a host clock far ahead keeps its dead
 * letters longer, one far behind ages them out sooner); with {@code LogAppendTime} it is the
 * broker's own, and only the broker's clock decides. Deletion is per segment, so a dead letter may
 * outlive {@code retention.ms} by up to {@code segment.ms}. A dead letter past retention is gone:
 * {@link #replay} says so.
 *
 * <p>Entries are deduplicated by message id: the topic belongs to one subscription (source topic
 * and group), so a dead letter written twice for one message (the default hand-off after a crash
 * between the copy and the offset commit) shows once, the later copy winning; the same message
 * dead-lettered by another group stays in that group's topic. The topic is read with {@code
 * isolation.level=read_committed}: copies of aborted hand-off transactions are never shown.
 *
 * <p>Cost: every read scans the topic from its beginning, O(records in the topic); meant for
 * operators and tests, not a hot path. Filters, the order ({@link DeadLetterQuery#newestFirst})
 * and keyset positions ({@link DeadLetterQuery#withAfter}) are applied in memory after that scan,
 * so a keyset page deep in the topic costs as much as the first, and {@link #countBySource} is
 * one scan too: O(records) reads and O(dead letters) memory per call. Thread-safe.
 */
public final class KafkaDeadLetterStore implements DeadLetterStore, AutoCloseable {

  /** The type of the stand-in message of an undecodable record. */
  public static final String UNDECODABLE_TYPE = "relaykit.undecodable";
  /** Header of a replay marker: the id of the dead letter it hides. */
  static final String REPLAYED = "relaykit-replayed";
  /**
   * Header of a reference entry: the position ({@code topic-partition@offset}) of the original
   * record, written when the full dead-letter copy did not fit. Its body only names that position;
   * {@link #replay} reads the original from there.
   */
  static final String REFERENCE = "relaykit-dead-ref";

  private static final Set<String> FAILURE_HEADERS = Set.of(MessageHeaders.ATTEMPT,
      MessageHeaders.FIRST_FAILURE_AT, MessageHeaders.LAST_FAILURE_AT, MessageHeaders.RETRY_AT,
      MessageHeaders.DEAD_REASON, MessageHeaders.EXCEPTION_CLASS,
      MessageHeaders.EXCEPTION_MESSAGE, MessageHeaders.SOURCE, MessageHeaders.SOURCE_POSITION,
      MessageHeaders.GROUP, REFERENCE);

  private static final String UNSUPPORTED = "a Kafka dead-letter topic cannot delete single "
      + "records, and markers cannot make removal at-most-once; use replay(id), which resends the "
      + "message and hides the entry, and the topic's retention.ms to age entries out";

  private final KafkaTransportConfig config;
  private final String topic;
  /** The group owning the topic ({@link #forSubscription}); null for {@link #create}. */
  private final String group;
  private final KafkaPublisher producer;

  private KafkaDeadLetterStore(KafkaTransportConfig config, String topic, String group) {
    this.config = config;
    this.topic = topic;
    this.group = group;
    this.producer = KafkaPublisher.createRouter(config);
  }

  /**
   * The view over {@code deadLetterTopic}, not tied to a consumer group: a dead letter without a
   * group header replays to its source topic. Creates a producer (for {@link #add} and {@link
   * #replay}); nothing is read until the first query.
   *
   * @param config the brokers and client settings
   * @param deadLetterTopic the topic to view
   * @return a new store, owned by the caller: close it to release its producer
   * @throws IllegalArgumentException if the config is null or the topic name is illegal
   */
  public static KafkaDeadLetterStore create(KafkaTransportConfig config, String deadLetterTopic) {
    KafkaClientVersion.check();
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    KafkaTransportConfig.requireTopicName("deadLetterTopic", deadLetterTopic);
    return new KafkaDeadLetterStore(config, deadLetterTopic, null);
  }

  /**
   * The view over the dead-letter topic of {@code topic} for consumer {@code group} (named by
   * {@link KafkaTransportConfig#deadLetterTopic}), the topic a {@link KafkaSubscriber} of that
   * group writes; its entries replay to the group's retry topic. Creates a producer; nothing is
   * read until the first query.
   *
   * @param config the brokers, client settings and topic naming the subscriber used
   * @param topic the source topic
   * @param group the consumer group that dead-lettered the messages
   * @return a new store, owned by the caller: close it to release its producer
   * @throws IllegalArgumentException if the config is null, the group is blank, or the topic or
   *     the derived dead-letter topic name is not a legal Kafka topic name
   */
  public static KafkaDeadLetterStore forSubscription(KafkaTransportConfig config, String topic,
      String group) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    if (group == null || group.isBlank()) {
      throw new IllegalArgumentException("group must not be blank, was "
          + (group == null ? "null" : "'" + group + "'"));
    }
    String deadLetterTopic = config.deadLetterTopic(topic, group);
    KafkaTransportConfig.requireTopicName("deadLetterTopic", deadLetterTopic);
    return new KafkaDeadLetterStore(config, deadLetterTopic, group);
  }

  /**
   * The dead-letter topic this store reads and writes.
   *
   * @return the topic name
   */
  public String topic() {
    return topic;
  }

  /**
   * Appends {@code deadLetter} to the topic and waits for the broker's confirm. A later entry with
   * the same id replaces an earlier one in every read.
   */
  @Override
  public void add(DeadLetter deadLetter) {
    if (deadLetter == null) {
      throw new IllegalArgumentException("deadLetter must not be null");
    }
    Message m = deadLetter.message();
    Map<String, String> headers = DeadLetterHeaders.toWire(deadLetter);
    await(producer.send(new ProducerRecord<>(topic, null, m.key().orElse(null), m.payload(),
        KafkaRecords.toHeaders(headers)), m.id()), "add dead letter " + m.id());
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    requireId(id);
    Entry e = scan().get(id);
    return e == null ? Optional.empty() : Optional.of(e.deadLetter);
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    if (query == null) {
      throw new IllegalArgumentException("query must not be null");
    }
    return matching(query).stream().filter(query::isAfterPosition).skip(query.offset())
        .limit(query.limit()).toList();
  }

  /** One scan of the topic, tallied in memory: O(records) reads, O(dead letters) memory. */
  @Override
  public List<io.relaykit.deadletter.DeadLetterCount> countBySource(int maxRows) {
    if (maxRows < 1 || maxRows > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(
          "maxRows must be in 1.." + DeadLetterQuery.MAX_LIMIT + ", was " + maxRows);
    }
    io.relaykit.deadletter.InMemoryDeadLetterStore tally =
        new io.relaykit.deadletter.InMemoryDeadLetterStore();
    for (Entry e : scan().values()) {
      tally.add(e.deadLetter);
    }
    return tally.countBySource(maxRows);
  }

  @Override
  public long count(DeadLetterQuery query) {
    if (query == null) {
      throw new IllegalArgumentException("query must not be null");
    }
    return matching(query).size();
  }

  /** Always throws: see the class documentation. */
  @Override
  public Optional<DeadLetter> remove(String id) {
    throw new UnsupportedOperationException("remove: " + UNSUPPORTED);
  }

  /** Always throws: see the class documentation. */
  @Override
  public long purge(DeadLetterQuery query) {
    throw new UnsupportedOperationException("purge: " + UNSUPPORTED);
  }

  /**
   * Resends the dead letter with {@code id} (its original key, value and headers, without the
   * failure headers, so it starts again at attempt 1 with its id and trace id), waits for the
   * confirm, then hides the entry with a replay marker. A dead letter of a consumer group (every
   * entry the runtime writes, and any whose store is {@link #forSubscription}) goes to that group's
   * retry topic, due at once: only that group handles it again, as a record of its source topic.
   * One without a group goes to its source topic. A reference entry (written when the full copy
   * did not fit the topic) resends the original record, read at the position it names.
   *
   * <p>Cost: one scan of the topic (see the class documentation) plus two confirmed sends.
   *
   * @param id the dead letter's id (its message id, or the stand-in id of an undecodable record)
   * @return the replayed dead letter, or empty if there is none (never added, or already replayed)
   * @throws IllegalArgumentException if {@code id} is null or blank
   * @throws IllegalStateException if the resend or the marker was not confirmed (a failed resend
   *     leaves the entry visible, a failed marker leaves it visible although it was resent), or the
   *     original of a reference entry is gone
   */
  public Optional<DeadLetter> replay(String id) {
    requireId(id);
    Entry e = scan().get(id);
    if (e == null) {
      return Optional.empty();
    }
    String reference = KafkaRecords.fromHeaders(e.record.headers()).get(REFERENCE);
    ConsumerRecord<String, byte[]> r = reference == null ? e.record : original(id, reference);
    Map<String, String> entryHeaders = KafkaRecords.fromHeaders(e.record.headers());
    Map<String, String> headers = new LinkedHashMap<>(KafkaRecords.fromHeaders(r.headers()));
    headers.keySet().removeAll(FAILURE_HEADERS);
    String source = e.deadLetter.source();
    String destination = source;
    if (e.deadLetter.group() != null) {
      // Into the group's retry topic, due now, at attempt 1, consumed as a record of the source.
      destination = config.retryTopic(source, e.deadLetter.group());
      headers.put(MessageHeaders.SOURCE, source);
      String position = entryHeaders.get(MessageHeaders.SOURCE_POSITION);
      if (position != null) {
        headers.put(MessageHeaders.SOURCE_POSITION, position);
      }
    }
    await(producer.send(new ProducerRecord<>(destination, null, r.key(), r.value(),
        KafkaRecords.toHeaders(headers)), id), "replay " + id + " to " + destination);
    await(producer.send(new ProducerRecord<>(topic, e.record.partition(), e.record.key(), null,
        KafkaRecords.toHeaders(Map.of(REPLAYED, id))), id), "mark " + id + " replayed");
    Message m = e.deadLetter.message();
    LifecycleListener.safely(config.listener(), new LifecycleEvent(LifecycleEvent.Stage.REPLAYED,
        m.id(), m.traceId(), source, config.clock().instant(), "replayed from " + topic));
    return Optional.of(e.deadLetter);
  }

  @Override
  public void close() {
    producer.close();
  }

  /**
   * The original record of reference entry {@code id}, read at {@code position}.
   *
   * @throws IllegalStateException if the position is unreadable or the record is gone (retention)
   */
  private ConsumerRecord<String, byte[]> original(String id, String position) {
    var at = KafkaRecords.parsePosition(position);
    if (at == null) {
      throw new IllegalStateException("dead letter " + id + " refers to an unreadable position "
          + position);
    }
    try (KafkaConsumer<String, byte[]> c = reader()) {
      c.assign(List.of(at.getKey()));
      c.seek(at.getKey(), at.getValue());
      long deadline = System.nanoTime() + config.publishTimeout().toNanos();
      while (System.nanoTime() - deadline < 0) {
        for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(100))) {
          if (r.offset() == at.getValue()) {
            return r;
          }
          if (r.offset() > at.getValue()) {
            break;
          }
        }
        if (c.position(at.getKey()) > at.getValue()) {
          break;
        }
      }
    } catch (org.apache.kafka.common.KafkaException e) {
      throw new IllegalStateException("could not read the original of dead letter " + id
          + " at " + position + ": " + e, e);
    }
    throw new IllegalStateException("the original of dead letter " + id + " at " + position
        + " is gone (past the topic's retention?); it cannot be replayed");
  }

  private static final Comparator<DeadLetter> ORDER =
      Comparator.comparing(DeadLetter::lastFailureAt).thenComparing(DeadLetter::id);

  private List<DeadLetter> matching(DeadLetterQuery query) {
    return scan().values().stream()
        .map(e -> e.deadLetter)
        .filter(query::matches)
        .sorted(query.newestFirst() ? ORDER.reversed() : ORDER)
        .toList();
  }

  private static void requireId(String id) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("id must not be blank, was "
          + (id == null ? "null" : "'" + id + "'"));
    }
  }

  private static <T> T await(java.util.concurrent.CompletableFuture<T> f, String what) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted: " + what, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("could not " + what + ": " + e.getCause().getMessage(),
          e.getCause());
    }
  }

  private record Entry(DeadLetter deadLetter, ConsumerRecord<String, byte[]> record) {}

  /** Reads the topic from the beginning to its current end: id to latest visible entry. */
  private KafkaConsumer<String, byte[]> reader() {
    Map<String, Object> props = new HashMap<>(config.consumerProperties());
    props.put("bootstrap.servers", config.bootstrapServers());
    props.put("client.id", config.clientIdPrefix() + "-dlt-reader-" + Long.toHexString(
        System.nanoTime()));
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", "earliest");
    // Dead-letter copies of aborted hand-off transactions (HandOff.TRANSACTIONAL) are not entries.
    props.put("isolation.level", "read_committed");
    props.remove("group.id");
    return new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
  }

  private Map<String, Entry> scan() {
    List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> c = reader()) {
      List<PartitionInfo> infos = c.partitionsFor(topic, config.publishTimeout());
      if (infos == null || infos.isEmpty()) {
        return Map.of();
      }
      List<TopicPartition> parts = infos.stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> ends = c.endOffsets(parts, config.publishTimeout());
      long deadline = System.nanoTime() + config.publishTimeout().toNanos();
      while (parts.stream().anyMatch(p -> c.position(p) < ends.get(p))) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("reading dead-letter topic " + topic
              + " did not reach its end within " + config.publishTimeout(),
              new TimeoutException());
        }
        c.poll(Duration.ofMillis(100)).forEach(records::add);
      }
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
      throw new IllegalStateException("could not read dead-letter topic " + topic + ": " + e, e);
    }
    // Entries and markers of one id share a key and so a partition; across partitions (records
    // without a key) the record time decides which came last.
    records.sort(Comparator.comparingLong((ConsumerRecord<String, byte[]> r) -> r.timestamp())
        .thenComparingInt(ConsumerRecord::partition).thenComparingLong(ConsumerRecord::offset));
    Map<String, Entry> visible = new LinkedHashMap<>();
    for (ConsumerRecord<String, byte[]> r : records) {
      Map<String, String> wire = KafkaRecords.fromHeaders(r.headers());
      String replayed = wire.get(REPLAYED);
      if (replayed != null) {
        visible.remove(replayed);
        continue;
      }
      DeadLetter d = decode(r, wire);
      visible.put(d.id(), new Entry(d, r));
    }
    return visible;
  }

  private DeadLetter decode(ConsumerRecord<String, byte[]> r, Map<String, String> wire) {
    Instant recordTime = Instant.ofEpochMilli(r.timestamp());
    Message message;
    try {
      message = MessageHeaders.fromWire(wire, r.key(), r.value());
    } catch (MalformedMessageException e) {
      message = standIn(r, wire, recordTime);
    }
    return DeadLetterHeaders.fromWire(message, wire, topic, group, recordTime);
  }

  private static Message standIn(ConsumerRecord<String, byte[]> r, Map<String, String> wire,
      Instant recordTime) {
    Map<String, String> user = new LinkedHashMap<>();
    wire.forEach((k, v) -> {
      if (!MessageHeaders.isReserved(k) && !k.isBlank()) {
        user.put(k, v);
      }
    });
    byte[] value = r.value() == null || r.value().length == 0
        ? "(empty)".getBytes(StandardCharsets.UTF_8) : r.value();
    String origin = wire.get(MessageHeaders.SOURCE_POSITION);
    String id = "dlt:" + (origin != null && !origin.isBlank() ? origin
        : KafkaRecords.position(r.topic(), r.partition(), r.offset()));
    // Derived from the id, so every read shows the same stand-in.
    String traceId = UUID.nameUUIDFromBytes(id.getBytes(StandardCharsets.UTF_8)).toString()
        .replace("-", "");
    return Message.builder()
        .id(id)
        .traceId(traceId)
        .type(UNDECODABLE_TYPE)
        .key(r.key() == null || r.key().isBlank() ? null : r.key())
        .payload(value)
        .headers(user)
        .createdAt(recordTime)
        .build();
  }

  @Override
  public String toString() {
    return "KafkaDeadLetterStore[topic=" + topic + "]";
  }
}

package io.relaykit.transport.kafka;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A {@link Publisher} on Kafka: an idempotent producer with {@code acks=all}, so a completed future
 * means every in-sync replica holds the record, and a retried send inside the producer never
 * duplicates or reorders it. The message key is the record key (so one key stays on one partition,
 * in order); the envelope travels as {@link MessageHeaders} record headers, the payload as the
 * value.
 *
 * <p>Sends are batched by the producer (5 ms linger); each message still gets its own future, whose
 * receipt position reads {@code topic-partition@offset}. A record larger than {@link
 * KafkaTransportConfig#maxRecordBytes()} fails at once with {@link MessageRejectedException}, as do
 * an illegal topic name and any refusal a retry cannot fix; everything else (timeouts, lost
 * connections, a closing publisher) fails with the retryable {@link PublishException}. Thread-safe.
 */
public final class KafkaPublisher implements Publisher {

  private static final AtomicInteger CLIENT_IDS = new AtomicInteger();
  /**
   * What a foreign record's copies carry beyond its own headers: the relaykit envelope of its
   * decoded message, whose id, type and key may each be mapped from a header of up to {@link
   * io.relaykit.message.InboundMapping#MAX_MAPPED_CHARS} characters (at most 3 UTF-8 bytes each),
   * plus the fixed envelope fields (schema version, times, priority, trace id) and their names.
   */
  static final int FOREIGN_ENVELOPE_BYTES =
      3 * 3 * io.relaykit.message.InboundMapping.MAX_MAPPED_CHARS + 1024;
  /**
   * How much larger than {@link KafkaTransportConfig#maxRecordBytes()} a retry or dead-letter copy
   * may be: its failure headers ({@link io.relaykit.deadletter.FailureRoute#MAX_HEADER_BYTES}, the
   * source's name), the transport's own (source position, group, reference) and, for a foreign
   * record, its envelope ({@link #FOREIGN_ENVELOPE_BYTES}), so that a record that was accepted is
   * never refused as a copy only because of what relaykit added.
   */
  static final int COPY_HEADROOM = io.relaykit.deadletter.FailureRoute.MAX_HEADER_BYTES + 4096
      + FOREIGN_ENVELOPE_BYTES;
  /** What the producer's and the broker's framing add to a record, beyond its payload bytes. */
  static final int FRAMING_BYTES = 4096;

  private final Producer<String, byte[]> producer;
  private final KafkaTransportConfig config;
  private final InstantSource clock;
  private final LifecycleListener listener;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The largest record this publisher sends: maxRecordBytes, plus the headroom for copies. */
  private final long maxBytes;

  private KafkaPublisher(Producer<String, byte[]> producer, KafkaTransportConfig config,
      long maxBytes) {
    this.producer = producer;
    this.config = config;
    this.maxBytes = maxBytes;
    this.clock = config.clock();
    this.listener = config.listener();
  }

  /**
   * A publisher with its own producer on {@code config}'s brokers. The producer reaches the
   * brokers in the background; the first send waits (up to the publish timeout) for its metadata.
   * Close it to release the producer's thread and connections.
   *
   * @param config the brokers and producer settings
   * @return a new publisher, owned by the caller
   * @throws IllegalArgumentException if {@code config} is null
   * @throws io.relaykit.internal.ClientVersionException if kafka-clients is older than 4.1.2
   */
  public static KafkaPublisher create(KafkaTransportConfig config) {
    KafkaClientVersion.check();
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new KafkaPublisher(
        new KafkaProducer<>(producerProperties(config, "publisher"), new StringSerializer(),
            new ByteArraySerializer()),
        config, config.maxRecordBytes());
  }

  /** The consumer runtime's own producer for retry and dead-letter copies. */
  static KafkaPublisher createRouter(KafkaTransportConfig config) {
    return new KafkaPublisher(
        new KafkaProducer<>(producerProperties(config, "router"), new StringSerializer(),
            new ByteArraySerializer()),
        config, copyLimit(config));
  }

  /**
   * A router whose producer is transactional with {@code transactionalId}, for the transactional
   * hand-off ({@link TransactionalCopies} begins, commits and aborts its transactions). Its {@code
   * initTransactions} is not called here.
   */
  static KafkaPublisher createTransactionalRouter(KafkaTransportConfig config,
      String transactionalId) {
    Map<String, Object> props = producerProperties(config, "tx-router");
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    return new KafkaPublisher(new KafkaProducer<>(props, new StringSerializer(),
        new ByteArraySerializer()), config, copyLimit(config));
  }

  /** The producer itself, for transaction control (transactional routers only). */
  Producer<String, byte[]> producer() {
    return producer;
  }

  /** Closes the producer without waiting for anything (a transactional router that failed). */
  void closeNow() {
    if (closed.compareAndSet(false, true)) {
      producer.close(java.time.Duration.ZERO);
    }
  }

  /** The largest retry or dead-letter copy: maxRecordBytes plus {@link #COPY_HEADROOM}. */
  static long copyLimit(KafkaTransportConfig config) {
    return (long) config.maxRecordBytes() + COPY_HEADROOM;
  }

  /** The producer settings this transport uses: the user's extras under the protected ones. */
  static Map<String, Object> producerProperties(KafkaTransportConfig config, String role) {
    Map<String, Object> props = new HashMap<>();
    long limit = "publisher".equals(role) ? config.maxRecordBytes() : copyLimit(config);
    long timeoutMs = config.publishTimeout().toMillis();
    long lingerMs = Math.min(5, Math.max(0, timeoutMs / 4));
    props.put(ProducerConfig.LINGER_MS_CONFIG, Long.toString(lingerMs));
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
        Long.toString(Math.max(1, Math.min(30_000, timeoutMs - lingerMs))));
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
    // Our own size check runs first with a clear message; the producer's framing adds a little.
    props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
        Long.toString(Math.min(Integer.MAX_VALUE, limit + FRAMING_BYTES)));
    props.putAll(config.producerProperties());
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
    props.put(ProducerConfig.CLIENT_ID_CONFIG,
        config.clientIdPrefix() + "-" + role + "-" + CLIENT_IDS.incrementAndGet());
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    return props;
  }

  /**
   * The OpenTelemetry messaging system name.
   *
   * @return {@code "kafka"}
   */
  @Override
  public String messagingSystem() {
    return "kafka";
  }

  @Override
  public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank, was "
          + (destination == null ? "null" : "'" + destination + "'"));
    }
    if (message == null) {
      throw new IllegalArgumentException("message must not be null");
    }
    try {
      KafkaTransportConfig.requireTopicName("destination", destination);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(new MessageRejectedException(e.getMessage(), e));
    }
    if (closed.get()) {
      return CompletableFuture.failedFuture(
          new PublishException("publisher is closed; message " + message.id() + " was not sent"));
    }
    Map<String, String> wire = MessageHeaders.toWire(message);
    String key = message.key().orElse(null);
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(destination, null, key,
        message.payload(), KafkaRecords.toHeaders(wire));
    event(LifecycleEvent.Stage.PUBLISHED, message, destination, "");
    CompletableFuture<PublishReceipt> receipt = new CompletableFuture<>();
    send(record, message.id(), (md, error) -> {
      if (error != null) {
        receipt.completeExceptionally(error);
        return;
      }
      String position = KafkaRecords.position(md.topic(), md.partition(), md.offset());
      event(LifecycleEvent.Stage.CONFIRMED, message, destination, position);
      receipt.complete(new PublishReceipt(message.id(), destination, position));
    });
    return receipt;
  }

  private void event(LifecycleEvent.Stage stage, Message message, String destination,
      String detail) {
    if (listener == KafkaTransportConfig.NO_LISTENER) {
      return; // nobody listens: spare two events per message
    }
    LifecycleListener.safely(listener, new LifecycleEvent(stage, message.id(), message.traceId(),
        destination, clock.instant(), detail));
  }

  /**
   * Sends one raw record, for the consumer runtime's retry and dead-letter routing: the same size
   * check and the same failure mapping as {@link #publish}.
   */
  CompletableFuture<RecordMetadata> send(ProducerRecord<String, byte[]> record, String what) {
    CompletableFuture<RecordMetadata> result = new CompletableFuture<>();
    send(record, what, (md, error) -> {
      if (error == null) {
        result.complete(md);
      } else {
        result.completeExceptionally(error);
      }
    });
    return result;
  }

  /**
   * Checks the size, hands {@code record} to the producer and calls {@code done} exactly once:
   * with the broker's confirm, or with the failure already translated ({@link
   * MessageRejectedException} or {@link PublishException}). {@code done} runs on the caller's
   * thread for an immediate refusal, else on the producer's I/O thread, so it must be quick.
   */
  private void send(ProducerRecord<String, byte[]> record, String what,
      BiConsumer<RecordMetadata, RuntimeException> done) {
    if (closed.get()) {
      done.accept(null, new PublishException("publisher is closed; " + what + " was not sent"));
      return;
    }
    int size = KafkaRecords.payloadBytes(record.key(), record.value(), record.headers());
    if (size > maxBytes) {
      done.accept(null, new MessageRejectedException("message " + what
          + " is " + size + " bytes (key, payload and headers), over the limit of "
          + maxBytes + " bytes (maxRecordBytes" + (maxBytes > config.maxRecordBytes()
          ? " plus " + COPY_HEADROOM + " for a copy's failure headers" : "") + ") for topic "
          + record.topic()));
      return;
    }
    try {
      producer.send(record, (md, error) -> done.accept(md,
          error == null ? null : translate(record.topic(), what, error)));
    } catch (RuntimeException e) {
      // send() throws for a closed producer, a metadata timeout, or a serializer failure.
      done.accept(null, translate(record.topic(), what, e));
    }
  }

  private static RuntimeException translate(String topic, String what, Throwable error) {
    if (error instanceof RecordTooLargeException || error instanceof RecordBatchTooLargeException) {
      return new MessageRejectedException("message " + what + " is too large for topic " + topic
          + ": " + error.getMessage(), error);
    }
    if (error instanceof InvalidTopicException || error instanceof AuthorizationException
        || error instanceof SerializationException) {
      return new MessageRejectedException("topic " + topic + " refused message " + what + ": "
          + error.getMessage(), error);
    }
    return new PublishException("no confirm for message " + what + " on topic " + topic + ": "
        + error.getMessage(), error);
  }

  /**
   * Waits up to the configured close timeout for outstanding confirms, fails the rest with {@link
   * PublishException}, and rejects later publishes. Idempotent.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      producer.close(config.closeTimeout());
    }
  }
}

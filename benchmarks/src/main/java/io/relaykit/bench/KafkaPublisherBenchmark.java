package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.PublishReceipt;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * {@link KafkaPublisher#publish} beside a raw {@link KafkaProducer} with the same settings, in the
 * same run, against one in-JVM KRaft broker per fork ({@link KafkaTestBroker}). Each invocation
 * publishes {@value #MESSAGES} 256-byte messages over 100 keys to one single-partition topic and
 * waits for the last confirm; reported as messages per second.
 *
 * <p>An invocation is long (about 0.2 s at 100 000 messages/s) so that the wait for the last
 * batch's confirm (the 5 ms linger plus a round trip, the same on both sides) is a small part of
 * it: with 2 000 messages it was a third of an invocation and swung the ratio from run to run. The
 * broker shares the fork's JVM and warms up with it, slowly: its code runs per produce request
 * (one per batch of about 35 messages), not per message, and without priming the rate still
 * climbed through the first 30 s of a fork, so a short warm-up measured how fast each fork
 * compiled rather than the publisher. Each trial therefore first publishes {@value
 * #PRIMING_INVOCATIONS} × {@value #MESSAGES} messages through the side under test, untimed,
 * whatever the warm-up options. Compare the two in the same run, with measurement iterations of
 * seconds ({@code -wi 3 -w 5s -i 5 -r 5s}).
 *
 * <p>The raw baseline uses the publisher's producer settings ({@code acks=all}, idempotence, 5
 * requests in flight, {@code linger.ms=5}, the same timeouts and request size), the same key,
 * payload and headers ({@link MessageHeaders#toWire} as UTF-8), and waits on the futures the
 * producer returns.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class KafkaPublisherBenchmark {

  static final int MESSAGES = 20_000;
  /** Invocations run in the trial setup, untimed, before JMH's own warm-up: see the class doc. */
  static final int PRIMING_INVOCATIONS = 20;
  private static final long CONFIRM_WAIT_SECONDS = 60;

  /** Who publishes. */
  public enum Impl { RELAYKIT, RAW_KAFKA_PRODUCER }

  @Param
  Impl impl;

  private String topic;
  private List<Message> messages;
  private KafkaPublisher publisher;
  private KafkaProducer<String, byte[]> raw;

  @Setup(Level.Trial)
  public void open() throws Exception {
    KafkaTransportConfig config = KafkaTransportConfig.builder()
        .bootstrapServers(KafkaTestBroker.bootstrapServers())
        .build();
    topic = KafkaTestBroker.uniqueTopic("bench-publish");
    KafkaTestBroker.createTopic(topic, 1);
    byte[] body = new byte[256];
    Arrays.fill(body, (byte) 'x');
    messages = new ArrayList<>(MESSAGES);
    for (int i = 0; i < MESSAGES; i++) {
      messages.add(Message.builder().type("order.paid").key("order-" + (i % 100))
          .payload(body).build());
    }
    if (impl == Impl.RELAYKIT) {
      publisher = KafkaPublisher.create(config);
    } else {
      raw = new KafkaProducer<>(rawProperties(config), new StringSerializer(),
          new ByteArraySerializer());
    }
    for (int i = 0; i < PRIMING_INVOCATIONS; i++) {
      publish();
    }
  }

  /** What {@code KafkaPublisher.producerProperties} sets for the default config. */
  static Map<String, Object> rawProperties(KafkaTransportConfig config) {
    long timeoutMs = config.publishTimeout().toMillis();
    long lingerMs = Math.min(5, Math.max(0, timeoutMs / 4));
    Map<String, Object> props = new HashMap<>();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
    props.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-raw-producer");
    props.put(ProducerConfig.LINGER_MS_CONFIG, Long.toString(lingerMs));
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
        Long.toString(Math.max(1, Math.min(30_000, timeoutMs - lingerMs))));
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
    props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
        Long.toString(Math.min(Integer.MAX_VALUE, config.maxRecordBytes() + 4096L)));
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    return props;
  }

  @TearDown(Level.Trial)
  public void close() {
    if (publisher != null) {
      publisher.close();
    }
    if (raw != null) {
      raw.close();
    }
    // One trial per fork: stop the broker so the fork exits without JMH's 30 s shutdown wait.
    KafkaTestBroker.stop();
  }

  @Benchmark
  @OperationsPerInvocation(MESSAGES)
  public int publish() throws Exception {
    if (impl == Impl.RELAYKIT) {
      List<CompletableFuture<PublishReceipt>> confirms = new ArrayList<>(MESSAGES);
      for (Message m : messages) {
        confirms.add(publisher.publish(topic, m));
      }
      CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]))
          .get(CONFIRM_WAIT_SECONDS, TimeUnit.SECONDS);
      return confirms.size();
    }
    List<java.util.concurrent.Future<RecordMetadata>> confirms = new ArrayList<>(MESSAGES);
    for (Message m : messages) {
      RecordHeaders headers = new RecordHeaders();
      for (Map.Entry<String, String> h : MessageHeaders.toWire(m).entrySet()) {
        headers.add(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8));
      }
      confirms.add(raw.send(new ProducerRecord<>(topic, null, m.key().orElse(null), m.payload(),
          headers)));
    }
    // Futures complete in send order within a partition: the last one means all are confirmed.
    for (java.util.concurrent.Future<RecordMetadata> f : confirms) {
      f.get(CONFIRM_WAIT_SECONDS, TimeUnit.SECONDS);
    }
    return confirms.size();
  }
}

package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaSubscription;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
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
 * The Kafka consumer runtime ({@link KafkaSubscriber}) running a 5 ms handler ({@code
 * LockSupport.parkNanos(5_000_000)}) over one partition holding records over 100 keys, beside a
 * plain single-threaded {@link KafkaConsumer} poll loop (auto-commit off, {@code commitSync} after
 * each batch) running the same handler inline, in the same run, on one in-JVM KRaft broker per fork
 * ({@link KafkaTestBroker}). Reported as records per second.
 *
 * <p>Each trial creates a one-partition topic and publishes the records with {@link KafkaPublisher},
 * waiting for every confirm. Each invocation consumes all of them from the start with a fresh
 * group. Group join and the first fetch are excluded: the per-invocation setup subscribes and waits
 * until the first handler call (or the plain loop's first non-empty poll) is held at a gate; the
 * measured call opens the gate and returns at the last completion. So the rate is records / (last
 * completion − first handler start), plus the measured call's own few microseconds.
 *
 * <p>The subscriber keeps the default poll timeout (100 ms), as a user would: at concurrency 64
 * the room between pausing and resuming intake lasts about 40 ms of work, so a runtime that
 * resumed only when a poll timed out would leave its workers idle here (it did: 0.6 of ideal at
 * 100 ms, hidden by the 20 ms this benchmark used to set).
 *
 * <p>With {@code failingKeys=1} the topic also holds 100 records of one more key, spread evenly
 * through it, each of which fails its first attempt and goes through the retry topic (with the
 * default retry policy's delay); the invocation ends at the last of the same healthy records as
 * without it, so the two results compare the healthy keys' throughput beside a failing key with
 * their throughput alone.
 *
 * <p>The ideal at concurrency c is c × 200/s (12 800/s at 64); the plain loop's ideal is 200/s.
 * At concurrency 1 and in the plain loop one invocation of {@value #RUNTIME_RECORDS} records would
 * take 50 s, so those cases consume only the first {@value #SERIAL_RECORDS} records of the topic:
 * the rate is what is compared, and it does not depend on the count at one record at a time.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class KafkaConsumerBenchmark {

  static final int RUNTIME_RECORDS = 10_000;
  static final int SERIAL_RECORDS = 1_000;
  static final int KEYS = 100;
  static final long HANDLER_NANOS = 5_000_000;
  private static final long WAIT_SECONDS = 120;

  /** A topic holding {@value #RUNTIME_RECORDS} confirmed records over {@value #KEYS} keys. */
  static String publishTopic() throws Exception {
    return publishTopic(0);
  }

  /**
   * As above, plus {@value #RUNTIME_RECORDS} / {@value #KEYS} records of each of {@code
   * failingKeys} more keys ({@code key-100}, {@code key-101}...), one of each after every round of
   * {@value #KEYS} healthy records: the healthy keys' records and their order are the same with
   * and without failing keys.
   */
  static String publishTopic(int failingKeys) throws Exception {
    KafkaTransportConfig config = KafkaTransportConfig.builder()
        .bootstrapServers(KafkaTestBroker.bootstrapServers())
        .build();
    String topic = KafkaTestBroker.uniqueTopic("bench-consume");
    KafkaTestBroker.createTopic(topic, 1);
    byte[] body = new byte[256];
    Arrays.fill(body, (byte) 'x');
    try (KafkaPublisher publisher = KafkaPublisher.create(config)) {
      List<CompletableFuture<PublishReceipt>> confirms = new ArrayList<>(RUNTIME_RECORDS);
      for (int i = 0; i < RUNTIME_RECORDS; i++) {
        confirms.add(publisher.publish(topic, Message.builder().type("order.paid")
            .key("key-" + (i % KEYS)).payload(body).build()));
        if (i % KEYS == KEYS - 1) {
          for (int f = 0; f < failingKeys; f++) {
            confirms.add(publisher.publish(topic, Message.builder().type("order.paid")
                .key("key-" + (KEYS + f)).payload(body).build()));
          }
        }
      }
      CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]))
          .get(WAIT_SECONDS, TimeUnit.SECONDS);
    }
    return topic;
  }

  /**
   * The consumer runtime on one topic, one subscription with a fresh group per invocation; the
   * JMH states below hold the parameters and call in.
   */
  abstract static class Consumption {
    private KafkaSubscriber subscriber;
    private String topic;
    private KafkaSubscription subscription;
    private int records;
    private CountDownLatch gate;
    private CountDownLatch entered;
    private CountDownLatch done;
    private final AtomicInteger completed = new AtomicInteger();

    void openTrial() throws Exception {
      openTrial(0);
    }

    void openTrial(int failingKeys) throws Exception {
      topic = publishTopic(failingKeys);
      subscriber = KafkaSubscriber.create(KafkaTransportConfig.builder()
          .bootstrapServers(KafkaTestBroker.bootstrapServers())
          .commitInterval(Duration.ofMillis(200))
          .build());
    }

    void subscribe(OrderingMode mode, int concurrency, int limit) throws Exception {
      subscribe(mode, concurrency, limit, 0);
    }

    /**
     * As above; records of the failing keys ({@link #publishTopic(int)}: every key past the
     * {@value #KEYS} healthy ones) fail their first attempt (after the handler's work) and go
     * through the retry topic; the invocation ends at the {@code limit}-th completion of a healthy
     * key's record, so it measures the healthy keys' throughput beside the failing ones.
     */
    void subscribe(OrderingMode mode, int concurrency, int limit, int failingKeys)
        throws Exception {
      records = limit;
      gate = new CountDownLatch(1);
      entered = new CountDownLatch(1);
      done = new CountDownLatch(1);
      completed.set(0);
      CountDownLatch myGate = gate;
      CountDownLatch myEntered = entered;
      CountDownLatch myDone = done;
      MessageHandler handler = delivery -> {
        myEntered.countDown();
        myGate.await();
        LockSupport.parkNanos(HANDLER_NANOS);
        String key = delivery.message().key().orElse("");
        if (failingKeys > 0 && Integer.parseInt(key.substring(key.indexOf('-') + 1)) >= KEYS) {
          if (delivery.attempt() == 1) {
            throw new IllegalStateException("a failing key's first attempt");
          }
          return;
        }
        if (completed.incrementAndGet() == limit) {
          myDone.countDown();
        }
      };
      SubscriptionSpec spec = SubscriptionSpec.builder(topic, "bench-" + UUID.randomUUID())
          .ordering(mode)
          .concurrency(concurrency)
          .maxInFlight(Math.max(256, 16 * concurrency))
          .handlerTimeout(Duration.ofSeconds(30))
          .build();
      subscription = subscriber.subscribe(spec, handler);
      if (!entered.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
        throw new IllegalStateException("no record reached the handler in " + WAIT_SECONDS + " s");
      }
    }

    void run() throws InterruptedException {
      gate.countDown();
      if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
        throw new IllegalStateException("only " + completed.get() + " of " + records
            + " records were handled in " + WAIT_SECONDS + " s");
      }
    }

    void unsubscribe() {
      gate.countDown();
      subscription.close(Duration.ofSeconds(30));
    }

    void closeTrial() {
      subscriber.close();
      // One trial per fork: stop the broker so the fork exits without JMH's 30 s shutdown wait.
      KafkaTestBroker.stop();
    }
  }

  /** The runtime at concurrency 16 and 64 on all {@value #RUNTIME_RECORDS} records. */
  @State(Scope.Benchmark)
  public static class Runtime extends Consumption {
    @Param({"UNORDERED", "KEY"})
    OrderingMode mode;

    @Param({"16", "64"})
    int concurrency;

    /**
     * Keys beside the {@value #KEYS} healthy ones whose every record fails its first attempt and
     * succeeds on its retry: 0, or 1 (1 % of the keys and of the records). Measured on the healthy
     * keys' {@value #RUNTIME_RECORDS} records, the same work in both cases.
     */
    @Param({"0", "1"})
    int failingKeys;

    @Setup(Level.Trial)
    public void open() throws Exception {
      openTrial(failingKeys);
    }

    @Setup(Level.Invocation)
    public void join() throws Exception {
      subscribe(mode, concurrency, RUNTIME_RECORDS, failingKeys);
    }

    @TearDown(Level.Invocation)
    public void leave() {
      unsubscribe();
    }

    @TearDown(Level.Trial)
    public void close() {
      closeTrial();
    }
  }

  /** The runtime at concurrency 1, on the first {@value #SERIAL_RECORDS} records. */
  @State(Scope.Benchmark)
  public static class SerialRuntime extends Consumption {
    @Param({"UNORDERED", "KEY"})
    OrderingMode mode;

    @Param({"1"})
    int concurrency;

    @Setup(Level.Trial)
    public void open() throws Exception {
      openTrial();
    }

    @Setup(Level.Invocation)
    public void join() throws Exception {
      subscribe(mode, concurrency, SERIAL_RECORDS);
    }

    @TearDown(Level.Invocation)
    public void leave() {
      unsubscribe();
    }

    @TearDown(Level.Trial)
    public void close() {
      closeTrial();
    }
  }

  /** The plain poll loop, on the first {@value #SERIAL_RECORDS} records. */
  @State(Scope.Benchmark)
  public static class PlainLoop {
    private String topic;
    private KafkaConsumer<String, byte[]> consumer;
    private ConsumerRecords<String, byte[]> first;

    @Setup(Level.Trial)
    public void open() throws Exception {
      topic = publishTopic();
    }

    @Setup(Level.Invocation)
    public void subscribe() {
      consumer = new KafkaConsumer<>(Map.of(
          ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestBroker.bootstrapServers(),
          ConsumerConfig.GROUP_ID_CONFIG, "bench-plain-" + UUID.randomUUID(),
          ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
          ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
          ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500"),
          new StringDeserializer(), new ByteArrayDeserializer());
      consumer.subscribe(List.of(topic));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
      do {
        first = consumer.poll(Duration.ofMillis(100));
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the plain consumer got nothing in " + WAIT_SECONDS
              + " s");
        }
      } while (first.isEmpty());
    }

    int run() {
      int handled = 0;
      ConsumerRecords<String, byte[]> batch = first;
      while (true) {
        for (ConsumerRecord<String, byte[]> r : batch) {
          LockSupport.parkNanos(HANDLER_NANOS);
          if (++handled == SERIAL_RECORDS) {
            consumer.commitSync();
            return handled;
          }
        }
        consumer.commitSync();
        batch = consumer.poll(Duration.ofMillis(20));
      }
    }

    @TearDown(Level.Invocation)
    public void unsubscribe() {
      consumer.close();
    }

    @TearDown(Level.Trial)
    public void close() {
      KafkaTestBroker.stop();
    }
  }

  @Benchmark
  @OperationsPerInvocation(RUNTIME_RECORDS)
  public void runtime(Runtime state) throws InterruptedException {
    state.run();
  }

  @Benchmark
  @OperationsPerInvocation(SERIAL_RECORDS)
  public void runtimeSerial(SerialRuntime state) throws InterruptedException {
    state.run();
  }

  @Benchmark
  @OperationsPerInvocation(SERIAL_RECORDS)
  public int plainLoop(PlainLoop state) {
    return state.run();
  }
}

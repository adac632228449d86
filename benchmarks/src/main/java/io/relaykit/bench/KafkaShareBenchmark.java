package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
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
 * relaykit's share-group subscriber against its ceiling, plain share consumers doing the same work,
 * on one partition with a 5 ms handler ({@code parkNanos}), 192 handler threads in both cases, in
 * one run on the in-JVM KRaft broker:
 *
 * <ul>
 *   <li>{@code SHARE_3x64}: three {@link KafkaShareSubscriber} members, concurrency 64 each.
 *   <li>{@code RAW_SHARE_3x64}: three plain {@link KafkaShareConsumer} loops (explicit
 *       acknowledgement, record_limit, 128 records a poll), each running its batch on 64 threads
 *       and acknowledging ACCEPT before the next poll (target: relaykit ≥ 0.95×).
 * </ul>
 *
 * <p>Each invocation consumes all {@value #RECORDS} records of the trial's topic with fresh share
 * groups (from {@code earliest}). Group join is excluded as far as possible: setup waits until a
 * handler call is held at a gate in each of the three members (bounded by 30 s); the measured call
 * opens the gate and returns at the last completion. Ideal: 3 × 64 × 200/s = 38 400/s.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class KafkaShareBenchmark {

  static final int RECORDS = 12_000;
  static final long HANDLER_NANOS = 5_000_000;
  private static final long WAIT_SECONDS = 120;

  /** The compared setups. */
  public enum Setup3 { SHARE_3x64, RAW_SHARE_3x64 }

  /** One topic per trial, fresh groups per invocation. */
  @State(Scope.Benchmark)
  public static class Run {
    @Param({"SHARE_3x64", "RAW_SHARE_3x64"})
    Setup3 setup;

    private String topic;
    private KafkaTransportConfig config;
    private final List<AutoCloseable> open = new ArrayList<>();
    private CountDownLatch gate;
    private CountDownLatch done;
    private final AtomicInteger completed = new AtomicInteger();
    private final Set<Integer> entered = ConcurrentHashMap.newKeySet();

    @Setup(Level.Trial)
    public void openTrial() throws Exception {
      config = KafkaTransportConfig.builder()
          .bootstrapServers(KafkaTestBroker.bootstrapServers())
          .commitInterval(Duration.ofMillis(200))
          .build();
      topic = KafkaTestBroker.uniqueTopic("bench-share");
      KafkaTestBroker.createTopic(topic, 1);
      byte[] body = new byte[256];
      Arrays.fill(body, (byte) 'x');
      try (KafkaPublisher publisher = KafkaPublisher.create(config)) {
        List<CompletableFuture<PublishReceipt>> confirms = new ArrayList<>(RECORDS);
        for (int i = 0; i < RECORDS; i++) {
          confirms.add(publisher.publish(topic, Message.builder().type("order.paid")
              .key("key-" + (i % 100)).payload(body).build()));
        }
        CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]))
            .get(WAIT_SECONDS, TimeUnit.SECONDS);
      }
    }

    @Setup(Level.Invocation)
    public void subscribe() throws Exception {
      gate = new CountDownLatch(1);
      done = new CountDownLatch(1);
      completed.set(0);
      entered.clear();
      String group = "bench-" + UUID.randomUUID();
      int members = 3;
      int concurrency = 64;
      for (int m = 0; m < members; m++) {
        int member = m;
        MessageHandler handler = d -> work(member);
        SubscriptionSpec spec = SubscriptionSpec.builder(topic, group)
            .ordering(OrderingMode.UNORDERED).concurrency(concurrency)
            .maxInFlight(2 * concurrency).handlerTimeout(Duration.ofSeconds(30)).build();
        switch (setup) {
          case SHARE_3x64 -> {
            KafkaShareSubscriber s = KafkaShareSubscriber.create(config);
            Subscription sub = s.subscribe(spec, handler);
            open.add(() -> sub.close(Duration.ofSeconds(30)));
            open.add(s::close);
          }
          case RAW_SHARE_3x64 -> open.add(rawLoop(group, member, concurrency));
          default -> throw new AssertionError(setup);
        }
      }
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (entered.size() < members && System.nanoTime() < end) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      if (entered.isEmpty()) {
        throw new IllegalStateException("no record reached a handler");
      }
    }

    private void work(int member) throws InterruptedException {
      entered.add(member);
      gate.await();
      LockSupport.parkNanos(HANDLER_NANOS);
      if (completed.incrementAndGet() == RECORDS) {
        done.countDown();
      }
    }

    /** A plain share consumer loop: poll, run the batch on the pool, ACCEPT all, poll again. */
    private AutoCloseable rawLoop(String group, int member, int threads) throws Exception {
      if (member == 0) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        KafkaTestBroker.admin().incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
      }
      Map<String, Object> props = new HashMap<>();
      props.put("bootstrap.servers", KafkaTestBroker.bootstrapServers());
      props.put("group.id", group);
      props.put("share.acknowledgement.mode", "explicit");
      props.put("share.acquire.mode", "record_limit");
      props.put("max.poll.records", Integer.toString(2 * threads));
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      AtomicBoolean stop = new AtomicBoolean();
      KafkaShareConsumer<String, byte[]> consumer = new KafkaShareConsumer<>(props,
          new StringDeserializer(), new ByteArrayDeserializer());
      Thread t = new Thread(() -> {
        try {
          consumer.subscribe(List.of(topic));
          while (!stop.get()) {
            ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(100));
            List<CompletableFuture<Void>> fs = new ArrayList<>();
            for (ConsumerRecord<String, byte[]> rec : records) {
              fs.add(CompletableFuture.runAsync(() -> {
                try {
                  work(member);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }, pool));
            }
            CompletableFuture.allOf(fs.toArray(new CompletableFuture<?>[0])).join();
            for (ConsumerRecord<String, byte[]> rec : records) {
              consumer.acknowledge(rec, AcknowledgeType.ACCEPT);
            }
          }
        } catch (RuntimeException e) {
          if (!stop.get()) {
            throw e;
          }
        } finally {
          consumer.close(Duration.ofSeconds(5));
        }
      }, "raw-share-" + member);
      t.start();
      return () -> {
        stop.set(true);
        gate.countDown();
        consumer.wakeup();
        t.join(30_000);
        pool.shutdownNow();
      };
    }

    void run() throws InterruptedException {
      gate.countDown();
      if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
        throw new IllegalStateException("only " + completed.get() + " of " + RECORDS
            + " records were handled in " + WAIT_SECONDS + " s");
      }
    }

    @TearDown(Level.Invocation)
    public void unsubscribe() throws Exception {
      gate.countDown();
      for (AutoCloseable c : open) {
        c.close();
      }
      open.clear();
    }

    @TearDown(Level.Trial)
    public void closeTrial() {
      KafkaTestBroker.stop();
    }
  }

  /** All {@value #RECORDS} records through the chosen setup. */
  @Benchmark
  @OperationsPerInvocation(RECORDS)
  public void consume(Run run) throws InterruptedException {
    run.run();
  }
}

package io.relaykit.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ConfirmListener;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.PublishReceipt;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * {@link RabbitMqPublisher} (publisher confirms, bounded window) beside raw amqp-client async
 * confirms with the same window, in the same run, against the RabbitMQ at {@code
 * RELAYKIT_RABBITMQ_URI} (default {@code amqp://guest:guest@127.0.0.1:5672}). Each invocation
 * publishes {@value #MESSAGES} persistent 256-byte messages to one fresh destination (a fanout
 * exchange with one quorum queue) and waits for the last confirm; reported as messages per second.
 *
 * <p>The raw baseline: one channel in confirm mode, a semaphore of {@code window} permits taken
 * before each {@code basicPublish} (mandatory, persistent, the same headers as {@link
 * MessageHeaders#toWire}) and returned by a multiple-aware confirm listener. Each trial is primed
 * with the same {@value #PRIME_ROUNDS} invocations on both sides before JMH's warm-up (see {@code
 * prime}). The queue is purged after each iteration and deleted with its exchange at the end.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
// A fixed, pre-touched heap for both sides, as in ReportQueueBenchmark: heap growth during a short
// run otherwise lands in the first measured second of the side that allocates more.
@Fork(jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@OutputTimeUnit(TimeUnit.SECONDS)
public class RabbitMqPublisherBenchmark {

  static final int MESSAGES = 2_000;
  private static final int PRIME_ROUNDS = 15;
  private static final long CONFIRM_WAIT_SECONDS = 60;

  /** Who publishes. */
  public enum Impl { RELAYKIT, RAW_AMQP_CLIENT }

  @Param
  Impl impl;

  /** Unconfirmed messages allowed at once, on both sides. */
  @Param({"1024"})
  int window;

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqTopology.GroupQueues queues;
  private List<Message> messages;
  private RabbitMqPublisher publisher;
  private Connection rawConnection;
  private Channel raw;
  private Semaphore permits;
  private final ConcurrentSkipListMap<Long, Boolean> outstanding = new ConcurrentSkipListMap<>();

  @Setup(Level.Trial)
  public void open() throws Exception {
    config = RabbitMqTransportConfig.builder().confirmWindow(window).build();
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(config.uri());
    try {
      admin = factory.newConnection("relaykit-bench-admin");
    } catch (IOException | TimeoutException e) {
      throw new IllegalStateException("RabbitMQ is not reachable at " + redacted(config.uri())
          + " (RELAYKIT_RABBITMQ_URI): start it with `rabbitmq-server -detached`", e);
    }
    topology = RabbitMqTopology.of(config);
    destination = "bench-" + UUID.randomUUID().toString().substring(0, 8);
    queues = topology.declare(admin, destination, "bench");
    byte[] body = new byte[256];
    Arrays.fill(body, (byte) 'x');
    messages = new ArrayList<>(MESSAGES);
    for (int i = 0; i < MESSAGES; i++) {
      messages.add(Message.builder().type("order.paid").key("order-" + (i % 100))
          .payload(body).build());
    }
    if (impl == Impl.RELAYKIT) {
      publisher = RabbitMqPublisher.create(config);
    } else {
      rawConnection = factory.newConnection("relaykit-bench-raw");
      raw = rawConnection.createChannel();
      raw.confirmSelect();
      permits = new Semaphore(window);
      raw.addConfirmListener(new ConfirmListener() {
        @Override
        public void handleAck(long seq, boolean multiple) {
          release(seq, multiple);
        }

        @Override
        public void handleNack(long seq, boolean multiple) {
          release(seq, multiple);
        }
      });
    }
    prime();
  }

  /**
   * Primes the trial before JMH's warm-up: {@value #PRIME_ROUNDS} invocations through the side
   * being measured, then a purge. A RabbitMQ that sat idle while the suite's other benchmarks ran
   * confirms its first seconds of quorum-queue writes slower, and the relaykit side has more code
   * to compile than the raw loop; quick mode's 2 x 1 s warm-up covered neither (with the heap
   * growing as well), so relaykit's first measured second ran at half speed (7 273 then 13 848
   * ops/s against the raw side's 13 732 and 15 060 in one suite run). Both sides get the same
   * priming.
   */
  private void prime() throws Exception {
    for (int i = 0; i < PRIME_ROUNDS; i++) {
      publish();
    }
    purge();
  }

  private void release(long seq, boolean multiple) {
    if (multiple) {
      ConcurrentNavigableMap<Long, Boolean> done = outstanding.headMap(seq, true);
      int n = done.size();
      done.clear();
      permits.release(n);
    } else if (outstanding.remove(seq) != null) {
      permits.release();
    }
  }

  @TearDown(Level.Iteration)
  public void purge() throws IOException {
    try (Channel c = admin.createChannel()) {
      c.queuePurge(queues.queue());
    } catch (TimeoutException e) {
      throw new IOException(e);
    }
  }

  @TearDown(Level.Trial)
  public void close() throws Exception {
    if (publisher != null) {
      publisher.close();
    }
    if (rawConnection != null) {
      rawConnection.close();
    }
    topology.delete(admin, destination, "bench", true);
    admin.close();
  }

  @Benchmark
  @OperationsPerInvocation(MESSAGES)
  public int publish() throws Exception {
    if (impl == Impl.RELAYKIT) {
      List<CompletableFuture<PublishReceipt>> confirms = new ArrayList<>(MESSAGES);
      for (Message m : messages) {
        confirms.add(publisher.publish(destination, m));
      }
      CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]))
          .get(CONFIRM_WAIT_SECONDS, TimeUnit.SECONDS);
      return confirms.size();
    }
    String exchange = topology.exchange(destination);
    for (Message m : messages) {
      // The publisher's headers: the envelope's wire form, the key, the publish sequence.
      Map<String, Object> headers = new LinkedHashMap<>(MessageHeaders.toWire(m));
      m.key().ifPresent(key -> headers.put("relaykit-key", key));
      headers.put("relaykit-publish-seq", Long.toString(raw.getNextPublishSeqNo()));
      AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
          .deliveryMode(2)
          .contentType("application/octet-stream")
          .messageId(m.id())
          .type(m.type())
          .timestamp(new Date(m.createdAt().toEpochMilli()))
          .headers(headers)
          .build();
      permits.acquire();
      outstanding.put(raw.getNextPublishSeqNo(), Boolean.TRUE);
      raw.basicPublish(exchange, "", true, props, m.payload());
    }
    if (!permits.tryAcquire(window, CONFIRM_WAIT_SECONDS, TimeUnit.SECONDS)) {
      throw new IllegalStateException("RabbitMQ did not confirm " + MESSAGES + " messages in "
          + CONFIRM_WAIT_SECONDS + " s");
    }
    permits.release(window);
    return MESSAGES;
  }

  private static String redacted(String uri) {
    return uri.replaceAll("//[^@/]*@", "//***@");
  }
}

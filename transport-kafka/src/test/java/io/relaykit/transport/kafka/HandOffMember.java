package io.relaykit.transport.kafka;

import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * A subscription member run as a child JVM by {@link KafkaTransactionalHandOffTest}, so that the
 * test can kill it (SIGKILL: no close, no commit, no transaction abort) at a chosen point.
 *
 * <p>Arguments: bootstrap servers, topic, group, member id, hand-off ({@code confirmed} or {@code
 * transactional}), scenario ({@code stuck}: record 0 never finishes; {@code flowing}: it
 * succeeds). Records (payload = sequence number): 0 key a; 1 key c fails permanently (dead
 * letter); 2 key b fails its first attempt (retry due in an hour); 3 key b succeeds (parked behind
 * 2). Prints {@code READY}, {@code DELIVERED <seq> <attempt>}, {@code RETRIED <id>} and {@code
 * DEAD_LETTERED <id>} lines on stdout, flushed.
 */
public final class HandOffMember {

  private HandOffMember() {}

  /** The records' handler outcome, shared with the test's restarted member. */
  static void handle(int seq, int attempt, boolean stuck) {
    if (seq == 0 && stuck) {
      while (true) {
        LockSupport.park(); // never finishes: the partition's commit watermark stays at 0
      }
    }
    if (seq == 1) {
      throw new PermanentFailureException("record 1 is poison");
    }
    if (seq == 2 && attempt == 1) {
      throw new IllegalStateException("record 2 fails its first attempt");
    }
  }

  static SubscriptionSpec spec(String topic, String group) {
    return SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.KEY)
        .concurrency(4)
        .maxInFlight(16)
        .handlerTimeout(Duration.ofMinutes(10))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofHours(1))).build())
        .build();
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    String member = args[3];
    KafkaTransportConfig.HandOff handOff = KafkaTransportConfig.HandOff.valueOf(
        args[4].toUpperCase(java.util.Locale.ROOT));
    boolean stuck = args[5].equals("stuck");
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
        true, StandardCharsets.UTF_8);
    KafkaTransportConfig config = KafkaTransportConfig.builder()
        .bootstrapServers(bootstrap)
        .commitInterval(Duration.ofMillis(200))
        .pollTimeout(Duration.ofMillis(50))
        .consumerProperty("session.timeout.ms", "3000")
        .consumerProperty("heartbeat.interval.ms", "500")
        .handOff(handOff)
        .memberId(member)
        .listener(e -> {
          if (e.stage() == LifecycleEvent.Stage.RETRIED
              || e.stage() == LifecycleEvent.Stage.DEAD_LETTERED) {
            synchronized (out) {
              out.println(e.stage() + " " + e.messageId());
            }
          }
        })
        .build();
    KafkaSubscriber subscriber = KafkaSubscriber.create(config);
    subscriber.subscribe(spec(topic, group), d -> {
      int seq = Integer.parseInt(d.message().payloadUtf8());
      synchronized (out) {
        out.println("DELIVERED " + seq + " " + d.attempt());
      }
      handle(seq, d.attempt(), stuck);
    });
    synchronized (out) {
      out.println("READY");
    }
    while (true) {
      LockSupport.park(); // until killed
    }
  }
}

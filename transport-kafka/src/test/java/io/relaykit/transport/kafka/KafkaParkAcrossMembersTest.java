package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * F3 items 3 and 4: a key parked by one member is released whichever member would run its retry.
 * Records are produced to a partition other than their key's hash, so a retry copy partitioned by
 * key would land on the other member's retry partition.
 */
@DisplayName("Kafka key parking with two members and two partitions")
class KafkaParkAcrossMembersTest {

  private static final Duration WAIT = Duration.ofSeconds(90);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  /** A key whose hash puts it on the partition other than {@code partition} (of two). */
  private static String keyAwayFrom(int partition, String prefix) {
    for (int i = 0; ; i++) {
      String key = prefix + i;
      if (Utils.toPositive(Utils.murmur2(key.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
          % 2 != partition) {
        return key;
      }
    }
  }

  private static KafkaTransportConfig.Builder config(String protocol) {
    KafkaTransportConfig.Builder b = KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5));
    if (protocol.equals("consumer")) {
      return b.consumerProperty("group.protocol", "consumer"); // relaykit's default: range
    }
    if (protocol.equals("consumer-uniform")) {
      // Puts both retry partitions on one member and both source partitions on the other.
      return b.consumerProperty("group.protocol", "consumer")
          .consumerProperty("group.remote.assignor", "uniform");
    }
    String assignor = protocol.equals("range")
        ? "org.apache.kafka.clients.consumer.RangeAssignor"
        : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
    return b.consumerProperty("partition.assignment.strategy", assignor);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "cooperative-sticky", "consumer", "consumer-uniform"})
  @DisplayName("the later record of a key whose first record went to retry is handled, on every"
      + " partition, with two members")
  void parkIsReleasedWhicheverMemberRunsTheRetry(String protocol) throws Exception {
    String topic = newTopic("park2-" + protocol, 2);
    String group = topic + "-g";
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(4).maxInFlight(32)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(200))).build())
        .build();
    Queue<String> log = new ConcurrentLinkedQueue<>();
    io.relaykit.message.MessageHandler handler = d -> {
      String call = d.message().key().orElseThrow() + ":" + d.message().payloadUtf8() + "#"
          + d.attempt();
      log.add(call);
      if (d.message().payloadUtf8().equals("0") && d.attempt() == 1) {
        throw new IllegalStateException("first attempt of record 0 fails");
      }
    };
    KafkaSubscription a = clients.subscriber(config(protocol)).subscribe(spec, handler);
    KafkaSubscription b = clients.subscriber(config(protocol)).subscribe(spec, handler);
    Await.until(WAIT, "the members hold the four partitions between them", () ->
        a.backlog().lagByPartition().size() + b.backlog().lagByPartition().size() == 4
        && !a.backlog().lagByPartition().isEmpty() && !b.backlog().lagByPartition().isEmpty());

    String[] keys = {keyAwayFrom(0, "a"), keyAwayFrom(1, "b")};
    try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers()), new StringSerializer(),
        new ByteArraySerializer())) {
      for (int p = 0; p < 2; p++) {
        for (int seq = 0; seq < 2; seq++) {
          Message m = message(keys[p], seq);
          raw.send(new ProducerRecord<>(topic, p, m.key().orElseThrow(), m.payload(),
              KafkaRecords.toHeaders(MessageHeaders.toWire(m)))).get(30, TimeUnit.SECONDS);
        }
      }
    }

    Await.until(WAIT, "every key's later record handled", () ->
        log.contains(keys[0] + ":1#1") && log.contains(keys[1] + ":1#1")
        && log.contains(keys[0] + ":0#2") && log.contains(keys[1] + ":0#2"));
    Await.until(WAIT, "both source partitions committed to their end", () ->
        committedOffsets(group, topic).equals(Map.of(0, 2L, 1, 2L)));
    if (!protocol.equals("cooperative-sticky") && !protocol.equals("consumer-uniform")) {
      // The range assignors (classic, and relaykit's default for KIP-848) give a member the same
      // partitions of both topics: the copy lands where the park lives, and the key's order holds.
      List<String> calls = List.copyOf(log);
      for (String key : keys) {
        assertThat(calls.indexOf(key + ":1#1")).as(key + " order")
            .isGreaterThan(calls.indexOf(key + ":0#2"));
      }
    }
  }
}

package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@DisplayName("Kafka consumes records a plain KafkaProducer wrote (no relaykit headers)")
class KafkaForeignMessagesTest {

  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final long STAMP = Instant.parse("2026-11-30T12:00:00Z").toEpochMilli();

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static RetryPolicy quickRetries(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts)
        .backoff(Backoff.fixed(Duration.ofMillis(200))).build();
  }

  private static void sendPlain(List<ProducerRecord<String, byte[]>> records)
      throws Exception {
    try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers()), new StringSerializer(),
        new ByteArraySerializer())) {
      for (ProducerRecord<String, byte[]> r : records) {
        raw.send(r).get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static ProducerRecord<String, byte[]> plain(String topic, String key, String value,
      String... headers) {
    ProducerRecord<String, byte[]> r = new ProducerRecord<>(topic, 0, STAMP, key,
        value.getBytes(StandardCharsets.UTF_8));
    for (int i = 0; i < headers.length; i += 2) {
      r.headers().add(headers[i], headers[i + 1].getBytes(StandardCharsets.UTF_8));
    }
    return r;
  }

  @Test
  @DisplayName("a structured CloudEvent's retry copy, dead letter and replay carry its data, the"
      + " payload the handler saw, not the JSON event around it")
  void structuredCopiesCarryData() throws Exception {
    String topic = newTopic("foreign-structured", 1);
    String group = topic + "-g";
    sendPlain(List.of(
        plain(topic, "k1", structured("once", "s-once"), "content-type",
            "application/cloudevents+json"),
        plain(topic, "k2", structured("always", "s-always"), "content-type",
            "application/cloudevents+json")));
    AtomicBoolean poisoned = new AtomicBoolean(true);
    List<Delivery> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).concurrency(2).retryPolicy(quickRetries(3))
            .inbound(InboundMapping.foreign().cloudEvents(true).build()).build(),
        d -> {
          calls.add(d);
          String body = d.message().payloadUtf8();
          if (body.equals("s-once") && d.attempt() == 1) {
            throw new IllegalStateException("first attempt fails");
          }
          if (!body.equals("s-once") && poisoned.get()) {
            throw new IllegalStateException("always fails");
          }
        });
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    String once = io.relaykit.message.CloudEvents.identity("/s", "once");
    String always = io.relaykit.message.CloudEvents.identity("/s", "always");
    Await.until(WAIT, "s-always dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    Await.until(WAIT, "s-once retried", () -> calls.stream()
        .filter(d -> d.message().id().equals(once)).count() == 2);
    assertThat(calls).filteredOn(d -> d.message().id().equals(once))
        .extracting(d -> d.message().payloadUtf8()).containsOnly("s-once");
    assertThat(calls).filteredOn(d -> d.message().id().equals(always))
        .extracting(d -> d.message().payloadUtf8()).containsExactly("s-always", "s-always",
            "s-always");
    DeadLetter d = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(d.messageId()).isEqualTo(always);
    assertThat(d.message().payloadUtf8()).isEqualTo("s-always");
    poisoned.set(false);
    assertThat(dlt.replay(d.id())).isPresent();
    Await.until(WAIT, "the replay handled", () -> calls.stream()
        .filter(c -> c.message().id().equals(always)).count() == 4);
    assertThat(calls.get(calls.size() - 1).message().payloadUtf8()).isEqualTo("s-always");
    sub.close(Duration.ofSeconds(5));
  }

  private static String structured(String id, String data) {
    return "{\"specversion\":\"1.0\",\"id\":\"" + id + "\",\"source\":\"/s\","
        + "\"type\":\"t\",\"data\":\"" + data + "\"}";
  }

  @Test
  @DisplayName("mapped, retried until it succeeds, dead-lettered when it always fails, and the"
      + " dead letter replays and is consumed")
  void consumedRetriedDeadLetteredAndReplayed() throws Exception {
    String topic = newTopic("foreign", 1);
    String group = topic + "-g";
    sendPlain(List.of(
        plain(topic, "order-1", "flaky", "event-id", "e-1", "event-type", "order.paid"),
        plain(topic, "order-2", "poison"), // no id header: the position is its id
        plain(topic, "order-3", "fine", "tenant", "acme"),
        plain(topic, "order-1", "after-flaky"))); // same key: waits while flaky is in retry

    AtomicBoolean poisoned = new AtomicBoolean(true);
    List<Delivery> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).concurrency(2).retryPolicy(quickRetries(3))
            .inbound(InboundMapping.foreign().idHeader("event-id").typeHeader("event-type")
                .build()).build(),
        d -> {
          calls.add(d);
          String body = d.message().payloadUtf8();
          if (body.equals("flaky") && d.attempt() == 1) {
            throw new IllegalStateException("first attempt fails");
          }
          if (body.equals("poison") && poisoned.get()) {
            throw new IllegalStateException("always fails");
          }
        });
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "poison dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    Await.until(WAIT, "flaky retried to success", () -> calls.stream()
        .anyMatch(d -> d.message().payloadUtf8().equals("flaky") && d.attempt() == 2));

    Await.until(WAIT, "its key's later record handled", () -> calls.stream()
        .anyMatch(d -> d.message().payloadUtf8().equals("after-flaky")));
    Delivery flaky = calls.stream().filter(d -> d.message().payloadUtf8().equals("flaky"))
        .reduce((a, b) -> b).orElseThrow();
    assertThat(calls.indexOf(calls.stream().filter(d -> d.message().payloadUtf8()
        .equals("after-flaky")).findFirst().orElseThrow())).as("parked behind its key's retry")
        .isGreaterThan(calls.indexOf(flaky));
    assertThat(flaky.message().id()).isEqualTo("e-1");
    assertThat(flaky.message().type()).isEqualTo("order.paid");
    assertThat(flaky.message().key()).contains("order-1");
    assertThat(flaky.message().createdAt()).isEqualTo(Instant.ofEpochMilli(STAMP));
    Delivery fine = calls.stream().filter(d -> d.message().payloadUtf8().equals("fine"))
        .findFirst().orElseThrow();
    assertThat(fine.message().id()).isEqualTo(topic + "-0@2");
    assertThat(calls.indexOf(fine)).as("other keys flow meanwhile")
        .isLessThan(calls.indexOf(flaky));
    assertThat(fine.message().type()).isEqualTo(topic);
    assertThat(fine.message().headers()).containsEntry("tenant", "acme");

    List<Delivery> poisonCalls = calls.stream()
        .filter(d -> d.message().payloadUtf8().equals("poison")).toList();
    assertThat(poisonCalls).extracting(Delivery::attempt).containsExactly(1, 2, 3);
    assertThat(poisonCalls).extracting(d -> d.message().id()).containsOnly(topic + "-0@1");
    DeadLetter d = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(d.messageId()).isEqualTo(topic + "-0@1");
    assertThat(d.source()).isEqualTo(topic);
    assertThat(d.reason()).startsWith("attempts exhausted (3 of 3)");
    assertThat(d.message().key()).contains("order-2");

    poisoned.set(false);
    assertThat(dlt.replay(d.id())).contains(d);
    Await.until(WAIT, "replayed poison handled", () -> calls.stream()
        .filter(c -> c.message().payloadUtf8().equals("poison")).count() == 4);
    Delivery replayed = calls.stream().filter(c -> c.message().payloadUtf8().equals("poison"))
        .reduce((a, b) -> b).orElseThrow();
    assertThat(replayed.message().id()).isEqualTo(topic + "-0@1");
    assertThat(replayed.attempt()).isEqualTo(1);
    Await.until(WAIT, "the DLT is empty", () -> dlt.count(DeadLetterQuery.all()) == 0);
    sub.close(Duration.ofSeconds(5));
  }

  @Test
  @DisplayName("bad input: a blank, non-UTF-8 or oversize id header is dead-lettered as"
      + " undecodable naming the header, and the loop goes on; relaykitOnly rejects a record the"
      + " default mapping takes")
  void badInputIsNamed() throws Exception {
    String topic = newTopic("foreign-bad", 1);
    String group = topic + "-g";
    ProducerRecord<String, byte[]> notUtf8 = plain(topic, "k", "binary-id");
    notUtf8.headers().add(new RecordHeader("event-id", new byte[] {(byte) 0xC3, (byte) 0x28}));
    sendPlain(List.of(
        plain(topic, "k", "blank-id", "event-id", "   "),
        notUtf8,
        plain(topic, "k", "huge-id", "event-id", "x".repeat(100_000)),
        plain(topic, "k", "good", "event-id", "e-ok")));
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).concurrency(1)
            .inbound(InboundMapping.foreign().idHeader("event-id").build()).build(),
        handled::add);
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "three undecodable dead letters", () ->
        dlt.count(DeadLetterQuery.all()) == 3);
    Await.until(WAIT, "the good record handled", () -> handled.size() == 1);
    assertThat(handled.get(0).message().id()).isEqualTo("e-ok");
    assertThat(dlt.list(DeadLetterQuery.all())).extracting(DeadLetter::reason)
        .containsExactlyInAnyOrder(
            "undecodable: header event-id is blank: '   '",
            "undecodable: header event-id is not valid UTF-8",
            "undecodable: header event-id is 100000 characters, more than 1024: '"
                + "x".repeat(32) + "...'");
    sub.close(Duration.ofSeconds(5));

    String strict = newTopic("foreign-strict", 1);
    sendPlain(List.of(plain(strict, "k", "no envelope")));
    KafkaSubscription plainSub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(strict, strict + "-g").inbound(InboundMapping.relaykitOnly())
            .build(), handled::add);
    KafkaDeadLetterStore strictDlt = clients.deadLetterStore(strict, strict + "-g");
    Await.until(WAIT, "relaykitOnly dead-letters it", () ->
        strictDlt.count(DeadLetterQuery.all()) == 1);
    assertThat(strictDlt.list(DeadLetterQuery.all()).get(0).reason())
        .isEqualTo("undecodable: missing header relaykit-id");
    assertThat(handled).hasSize(1);
    plainSub.close(Duration.ofSeconds(5));

    // The default mapping takes the same record as a foreign message.
    KafkaSubscription defaultSub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(strict, strict + "-default").build(), handled::add);
    Await.until(WAIT, "the default mapping delivers it", () -> handled.size() == 2);
    assertThat(handled.get(1).message().id()).isEqualTo(strict + "-0@0");
    assertThat(handled.get(1).message().type()).isEqualTo(strict);
    assertThat(handled.get(1).message().payloadUtf8()).isEqualTo("no envelope");
    assertThat(clients.deadLetterStore(strict, strict + "-default")
        .count(DeadLetterQuery.all())).isZero();
    defaultSub.close(Duration.ofSeconds(5));
  }

  @Test
  @DisplayName("CloudEvents binary mode: a plain KafkaConsumer reads relaykit's event from ce_"
      + " headers, and a plain producer's CloudEvent is consumed with its id, type and time")
  void cloudEventsBothWays() throws Exception {
    String topic = newTopic("cloudevents", 1);
    Message event = Message.builder().id("1234-1234-1234").type("com.example.someevent")
        .key("mykey").payload("{\"a\":1}").createdAt(Instant.parse("2018-04-05T03:56:24Z"))
        .build();
    KafkaTestSupport.publishAll(topic, List.of(
        CloudEvents.kafka(event, "/mycontext/subcontext", null, "application/json")));
    ConsumerRecord<String, byte[]> raw = KafkaTestSupport.readAll(topic, 1).get(0);
    Map<String, String> ce = new java.util.HashMap<>();
    raw.headers().forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
    assertThat(ce).containsEntry("ce_specversion", "1.0").containsEntry("ce_id", "1234-1234-1234")
        .containsEntry("ce_type", "com.example.someevent")
        .containsEntry("ce_source", "/mycontext/subcontext")
        .containsEntry("ce_time", "2018-04-05T03:56:24Z")
        .containsEntry("content-type", "application/json");
    assertThat(raw.key()).isEqualTo("mykey");
    assertThat(new String(raw.value(), StandardCharsets.UTF_8)).isEqualTo("{\"a\":1}");

    // The other way: the spec's example written by a plain producer, bad ce_time included.
    String in = newTopic("cloudevents-in", 1);
    sendPlain(List.of(
        plain(in, "mykey", "avro-bytes", "ce_specversion", "1.0", "ce_type",
            "com.example.someevent", "ce_source", "/mycontext/subcontext", "ce_id",
            "1234-1234-1234", "ce_time", "2018-04-05T03:56:24Z", "content-type",
            "application/avro"),
        plain(in, "k2", "bad-time", "ce_specversion", "1.0", "ce_type", "t", "ce_source", "/s",
            "ce_id", "e-2", "ce_time", "not a time")));
    InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(in, in + "-g").inbound(mapping)
        .build(), handled::add);
    Await.until(WAIT, "both consumed", () -> handled.size() == 2);
    Message first = handled.stream().filter(d -> d.message().id().equals(
        CloudEvents.identity("/mycontext/subcontext", "1234-1234-1234")))
        .findFirst().orElseThrow().message();
    assertThat(first.type()).isEqualTo("com.example.someevent");
    assertThat(first.createdAt()).isEqualTo(Instant.parse("2018-04-05T03:56:24Z"));
    assertThat(first.headers()).containsEntry("content-type", "application/avro")
        .containsEntry("ce_source", "/mycontext/subcontext");
    Message second = handled.stream().filter(d -> d.message().id().equals(
        CloudEvents.identity("/s", "e-2")))
        .findFirst().orElseThrow().message();
    assertThat(second.createdAt()).as("bad ce_time ignored: the record timestamp")
        .isEqualTo(Instant.ofEpochMilli(STAMP));
    assertThat(mapping.ignoredAttributes()).isEqualTo(1);
  }

  @Test
  @DisplayName("malformed CloudEvents attributes and trace headers from a plain KafkaProducer are"
      + " ignored and counted, with bounded reasons, through the subscription's metrics")
  void malformedAttributesCounted() throws Exception {
    String topic = newTopic("foreign-ignored", 1);
    sendPlain(List.of(
        plain(topic, "k", "one", "ce_specversion", "1.0", "ce_id", "ce-bad", "ce_source", "/s",
            "ce_time", "noon",
            "traceparent", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        plain(topic, "k", "two", "ce_specversion", "2.0", "ce_id", "ce-future"),
        plain(topic, "k", "three", "ce_specversion", "1.0", "ce_id", "ce-fine", "ce_source", "/s",
            "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate", "=novalue")));
    Map<String, Long> ignored = new ConcurrentHashMap<>();
    MetricsListener metrics = new MetricsListener() {
      @Override
      public void ignored(String where, String reason, long count) {
        ignored.merge(where + " " + reason, count, Long::sum);
      }
    };
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .inbound(InboundMapping.foreign().cloudEvents(true).build()).metrics(metrics).build(),
        handled::add);

    Await.until(WAIT, "all three consumed", () -> handled.size() == 3);

    assertThat(handled).extracting(d -> d.message().id())
        .containsExactly(CloudEvents.identity("/s", "ce-bad"), topic + "-0@1",
            CloudEvents.identity("/s", "ce-fine"));
    Map<String, Long> expected = Map.of(
        topic + " " + MetricsListener.IGNORED_CLOUDEVENTS_ATTRIBUTE, 2L,
        topic + " " + MetricsListener.IGNORED_TRACEPARENT, 1L,
        topic + " " + MetricsListener.IGNORED_TRACESTATE, 1L);
    assertThat(ignored).isEqualTo(expected);

    // A subscription without a listener of its own reports to the transport's (config.metrics()).
    Map<String, Long> transportIgnored = new ConcurrentHashMap<>();
    MetricsListener transportMetrics = new MetricsListener() {
      @Override
      public void ignored(String where, String reason, long count) {
        transportIgnored.merge(where + " " + reason, count, Long::sum);
      }
    };
    List<Delivery> second = new CopyOnWriteArrayList<>();
    clients.subscriber(KafkaTestSupport.config().metrics(transportMetrics)
        .closeTimeout(Duration.ofSeconds(5))).subscribe(SubscriptionSpec.builder(topic,
        topic + "-g2").inbound(InboundMapping.foreign().cloudEvents(true).build()).build(),
        second::add);
    Await.until(WAIT, "all three consumed by the second group", () -> second.size() == 3);
    assertThat(transportIgnored).isEqualTo(expected);
    assertThat(ignored).as("the first group's listener saw only its own").isEqualTo(expected);
  }
}

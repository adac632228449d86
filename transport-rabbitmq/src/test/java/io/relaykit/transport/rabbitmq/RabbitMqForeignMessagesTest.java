package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.LongStringHelper;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMQ consumes messages a plain amqp-client publisher sent (no relaykit headers)")
class RabbitMqForeignMessagesTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final Instant STAMP = Instant.parse("2026-11-30T12:00:00Z");

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqSubscriber subscriber;
  private RabbitMqDeadLetterStore dlq;

  @BeforeEach
  void setUp() {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("foreign");
    subscriber = RabbitMqSubscriber.create(config);
  }

  @AfterEach
  void tearDown() throws Exception {
    subscriber.close();
    if (dlq != null) {
      dlq.close();
    }
    topology.delete(admin, destination, "g", false);
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  private SubscriptionSpec spec(InboundMapping inbound) {
    return SubscriptionSpec.builder(destination, "g").ordering(OrderingMode.UNORDERED)
        .concurrency(2).maxInFlight(16).inbound(inbound)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(200))).build()).build();
  }

  /** What a non-relaykit service does: plain amqp-client, its own properties and headers. */
  private void publishPlain(String routingKey, AMQP.BasicProperties props, String body)
      throws Exception {
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish(topology.exchange(destination), routingKey, true, props,
          body.getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  private static AMQP.BasicProperties props(String messageId, Map<String, Object> headers) {
    return new AMQP.BasicProperties.Builder().messageId(messageId)
        .timestamp(Date.from(STAMP)).headers(headers).build();
  }

  private static String body(Delivery d) {
    return d.message().payloadUtf8();
  }

  @Test
  @DisplayName("mapped, retried until it succeeds, dead-lettered when it always fails, and the"
      + " dead letter replays to the same queue and is consumed")
  void consumedRetriedDeadLetteredAndReplayed() throws Exception {
    AtomicBoolean poisoned = new AtomicBoolean(true);
    List<Delivery> calls = new CopyOnWriteArrayList<>();
    subscriber.subscribe(spec(InboundMapping.foreign().typeHeader("event-type").build()), d -> {
      calls.add(d);
      if (body(d).equals("flaky") && d.attempt() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
      if (body(d).equals("poison") && poisoned.get()) {
        throw new IllegalStateException("always fails");
      }
    });
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g");
    Map<String, Object> typed = new HashMap<>();
    typed.put("event-type", "order.paid");
    typed.put("tenant", LongStringHelper.asLongString("acme"));
    typed.put("count", 3);
    publishPlain("order-1", props("amqp-1", typed), "flaky");
    publishPlain("order-2", props(null, null), "poison"); // no message id: a content hash

    Await.until(WAIT, "poison dead-lettered", () -> dlq.count(DeadLetterQuery.all()) == 1);
    Await.until(WAIT, "flaky retried to success", () -> calls.stream()
        .anyMatch(d -> body(d).equals("flaky") && d.attempt() == 2));
    Delivery flaky = calls.stream().filter(d -> body(d).equals("flaky")).reduce((a, b) -> b)
        .orElseThrow();
    assertThat(flaky.message().id()).isEqualTo("amqp-1");
    assertThat(flaky.message().type()).isEqualTo("order.paid");
    assertThat(flaky.message().key()).contains("order-1");
    assertThat(flaky.message().createdAt()).isEqualTo(STAMP);
    assertThat(flaky.message().headers()).containsEntry("tenant", "acme")
        .containsEntry("count", "3");

    List<Delivery> poisonCalls = calls.stream().filter(d -> body(d).equals("poison")).toList();
    assertThat(poisonCalls).extracting(Delivery::attempt).containsExactly(1, 2, 3);
    String poisonId = poisonCalls.get(0).message().id();
    assertThat(poisonId).startsWith(destination + "@sha256:");
    assertThat(poisonCalls).extracting(d -> d.message().id()).containsOnly(poisonId);
    assertThat(poisonCalls.get(0).message().type()).isEqualTo(destination);
    DeadLetter d = dlq.list(DeadLetterQuery.all()).get(0);
    assertThat(d.messageId()).isEqualTo(poisonId);
    assertThat(d.reason()).startsWith("attempts exhausted (3 of 3)");
    assertThat(d.message().key()).contains("order-2");

    poisoned.set(false);
    assertThat(dlq.replay(d.id())).isPresent();
    Await.until(WAIT, "replayed poison handled", () -> calls.stream()
        .filter(c -> body(c).equals("poison")).count() == 4);
    Delivery replayed = calls.stream().filter(c -> body(c).equals("poison")).reduce((a, b) -> b)
        .orElseThrow();
    assertThat(replayed.message().id()).isEqualTo(poisonId);
    assertThat(replayed.attempt()).isEqualTo(1);
    Await.until(WAIT, "every queue empty", () -> topology.queues(destination, "g").allQueues()
        .stream().allMatch(q -> TestBroker.depth(admin, q) == 0));
  }

  @Test
  @DisplayName("bad input: a blank, non-UTF-8 or oversize id header is dead-lettered naming the"
      + " header; a table header is left out; later messages still flow")
  void badInputIsNamed() throws Exception {
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    subscriber.subscribe(spec(InboundMapping.foreign().idHeader("event-id").build()),
        handled::add);
    LongString notUtf8 = LongStringHelper.asLongString(new byte[] {(byte) 0xC3, (byte) 0x28});
    publishPlain("k", props(null, new HashMap<>(Map.of("event-id", "  "))), "blank");
    publishPlain("k", props(null, new HashMap<>(Map.of("event-id", notUtf8))), "binary");
    publishPlain("k", props(null, new HashMap<>(Map.of("event-id", "x".repeat(50_000)))), "huge");
    publishPlain("k", props(null, new HashMap<>(Map.of("event-id", "e-ok",
        "nested", Map.of("a", 1)))), "good");
    String dead = topology.queues(destination, "g").deadLetterQueue();
    Await.until(WAIT, "three dead letters", () -> TestBroker.depth(admin, dead) == 3);
    Await.until(WAIT, "the good one handled", () -> handled.size() == 1);
    assertThat(handled.get(0).message().id()).isEqualTo("e-ok");
    assertThat(handled.get(0).message().headers()).doesNotContainKey("nested");
    assertThat(TestBroker.drain(admin, dead)).extracting(r ->
        TestBroker.header(r, MessageHeaders.DEAD_REASON)).containsExactlyInAnyOrder(
            "undecodable: header event-id is blank: '  '",
            "undecodable: header event-id is not valid UTF-8",
            "undecodable: header event-id is 50000 characters, more than 1024: '"
                + "x".repeat(32) + "...'");
  }

  @Test
  @DisplayName("CloudEvents binary mode: a plain amqp-client consumer reads relaykit's event from"
      + " cloudEvents_ headers and the content-type property; a plain CloudEvent is consumed")
  void cloudEventsBothWays() throws Exception {
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();
    subscriber.subscribe(spec(mapping), handled::add);
    subscriber.close(); // the queue stays declared; what arrives now waits there
    subscriber = RabbitMqSubscriber.create(config);
    Message event = Message.builder().id("1234-1234-1234").type("com.example.someevent")
        .key("mykey").payload("{}").createdAt(Instant.parse("2018-04-05T03:56:24Z")).build();
    try (RabbitMqPublisher publisher = RabbitMqPublisher.create(config)) {
      publisher.publish(destination, CloudEvents.amqp(event, "/mycontext/subcontext", "sub-1",
          "application/json")).join();
    }
    String queue = topology.queues(destination, "g").queue();
    Await.until(WAIT, "the event queued", () -> TestBroker.depth(admin, queue) == 1);
    GetResponse raw = TestBroker.drain(admin, queue).get(0);
    assertThat(raw.getProps().getContentType()).isEqualTo("application/json");
    Map<String, String> ce = new HashMap<>();
    raw.getProps().getHeaders().forEach((k, v) -> ce.put(k, String.valueOf(v)));
    assertThat(ce).containsEntry("cloudEvents_specversion", "1.0")
        .containsEntry("cloudEvents_id", "1234-1234-1234")
        .containsEntry("cloudEvents_type", "com.example.someevent")
        .containsEntry("cloudEvents_source", "/mycontext/subcontext")
        .containsEntry("cloudEvents_subject", "sub-1")
        .containsEntry("cloudEvents_time", "2018-04-05T03:56:24Z");

    Map<String, Object> attrs = new HashMap<>();
    attrs.put("cloudEvents_specversion", "1.0");
    attrs.put("cloudEvents_id", "ce-9");
    attrs.put("cloudEvents_type", "com.example.someevent");
    attrs.put("cloudEvents_source", "/mycontext");
    attrs.put("cloudEvents_time", "2018-04-05T03:56:24Z");
    publishPlain("k", new AMQP.BasicProperties.Builder().contentType("application/avro")
        .headers(attrs).build(), "data");
    subscriber.subscribe(spec(mapping), handled::add);
    Await.until(WAIT, "the plain CloudEvent consumed", () -> handled.size() == 1);
    Message m = handled.get(0).message();
    assertThat(m.id()).isEqualTo(CloudEvents.identity("/mycontext", "ce-9"));
    assertThat(m.type()).isEqualTo("com.example.someevent");
    assertThat(m.createdAt()).isEqualTo(Instant.parse("2018-04-05T03:56:24Z"));
    assertThat(m.headers()).as("datacontenttype from the AMQP content-type property")
        .containsEntry("content-type", "application/avro")
        .containsEntry("cloudEvents_source", "/mycontext");
  }

  @Test
  @DisplayName("malformed CloudEvents attributes and trace headers from a plain publisher are"
      + " ignored and counted, with bounded reasons, through the subscription's metrics")
  void malformedAttributesCounted() throws Exception {
    List<Delivery> handled = new CopyOnWriteArrayList<>();
    Map<String, Long> ignored = new ConcurrentHashMap<>();
    MetricsListener metrics = new MetricsListener() {
      @Override
      public void ignored(String where, String reason, long count) {
        ignored.merge(where + " " + reason, count, Long::sum);
      }
    };
    subscriber.subscribe(SubscriptionSpec.builder(destination, "g")
        .ordering(OrderingMode.UNORDERED).concurrency(2).maxInFlight(16)
        .inbound(InboundMapping.foreign().cloudEvents(true).build()).metrics(metrics).build(),
        handled::add);
    Map<String, Object> bad = new HashMap<>();
    bad.put("cloudEvents_specversion", "1.0");
    bad.put("cloudEvents_id", "ce-bad");
    bad.put("cloudEvents_source", "/s");
    bad.put("cloudEvents_type", " ");
    bad.put("cloudEvents_time", "yesterday");
    bad.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01");
    publishPlain("k", props(null, bad), "one");
    Map<String, Object> old = new HashMap<>();
    old.put("cloudEvents_specversion", "0.3");
    old.put("cloudEvents_id", "ce-old");
    publishPlain("k", props("m-old", old), "two");
    Map<String, Object> fine = new HashMap<>();
    fine.put("cloudEvents_specversion", "1.0");
    fine.put("cloudEvents_id", "ce-fine");
    fine.put("cloudEvents_source", "/s");
    fine.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    publishPlain("k", props(null, fine), "three");

    Await.until(WAIT, "all three consumed", () -> handled.size() == 3);

    assertThat(handled).extracting(d -> d.message().id())
        .containsExactlyInAnyOrder(CloudEvents.identity("/s", "ce-bad"), "m-old",
            CloudEvents.identity("/s", "ce-fine"));
    assertThat(ignored).containsOnly(
        Map.entry(destination + " " + MetricsListener.IGNORED_CLOUDEVENTS_ATTRIBUTE, 3L),
        Map.entry(destination + " " + MetricsListener.IGNORED_TRACEPARENT, 1L));
  }

  @Test
  @DisplayName("CloudEvents in binary and structured mode, two sources with one id, and a plain"
      + " message without a message id: one identity per event in the handler, its retry, the"
      + " dead-letter list, find and replay; exactly once or dead-lettered per (id, group)")
  void cloudEventsIdentityEveryView() throws Exception {
    InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();
    Map<String, List<Delivery>> calls = new ConcurrentHashMap<>();
    Map<String, List<String>> succeeded = new ConcurrentHashMap<>();
    AtomicBoolean poisoned = new AtomicBoolean(true);
    subscriber.subscribe(spec(mapping), d -> {
      calls.computeIfAbsent(d.message().id(), k -> new CopyOnWriteArrayList<>()).add(d);
      String body = body(d);
      if (body.equals("b1") && poisoned.get()) {
        throw new IllegalStateException("always fails");
      }
      if (body.equals("a1") && d.attempt() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
      succeeded.computeIfAbsent("g", k -> new CopyOnWriteArrayList<>()).add(d.message().id());
    });
    subscriber.subscribe(SubscriptionSpec.builder(destination, "g2").inbound(mapping).build(),
        d -> succeeded.computeIfAbsent("g2", k -> new CopyOnWriteArrayList<>())
            .add(d.message().id()));
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g");
    try {
      publishPlain("k", binary("/a", "1"), "a1");
      publishPlain("k", binary("/b", "1"), "b1");
      publishPlain("k", new AMQP.BasicProperties.Builder()
          .contentType("application/cloudevents+json").build(),
          "{\"specversion\":\"1.0\",\"id\":\"2\",\"source\":\"/a\",\"type\":\"t\","
          + "\"data\":\"s-a2\"}");
      publishPlain("k", new AMQP.BasicProperties.Builder()
          .contentType("application/cloudevents+json; charset=utf-8").build(),
          "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/c\",\"type\":\"t\","
          + "\"data\":\"s-c1\"}");
      publishPlain("k", props(null, null), "plain");

      Await.until(WAIT, "b1 dead-lettered", () -> dlq.count(DeadLetterQuery.all()) == 1);
      Await.until(WAIT, "the rest handled in both groups", () ->
          succeeded.getOrDefault("g", List.of()).size() == 4
          && succeeded.getOrDefault("g2", List.of()).size() == 5);
      String a1 = CloudEvents.identity("/a", "1");
      String b1 = CloudEvents.identity("/b", "1");
      String a2 = CloudEvents.identity("/a", "2");
      String c1 = CloudEvents.identity("/c", "1");
      assertThat(calls.keySet()).hasSize(5).contains(a1, b1, a2, c1);
      assertThat(calls.get(a1)).extracting(Delivery::attempt).containsExactly(1, 2);
      assertThat(calls.get(b1)).extracting(Delivery::attempt).containsExactly(1, 2, 3);
      assertThat(calls.get(a2).get(0).message().payloadUtf8()).isEqualTo("s-a2");
      for (List<Delivery> ds : calls.values()) {
        assertThat(ds).extracting(d -> d.message().traceId())
            .containsOnly(ds.get(0).message().traceId());
      }
      Await.holds(Duration.ofMillis(500), "nothing more", () ->
          succeeded.get("g").size() == 4 && succeeded.get("g2").size() == 5);
      // exactly once or dead-lettered, per (id, group)
      assertThat(succeeded.get("g")).doesNotHaveDuplicates().doesNotContain(b1)
          .hasSize(4).contains(a1, a2, c1);
      assertThat(succeeded.get("g2")).doesNotHaveDuplicates()
          .containsExactlyInAnyOrderElementsOf(calls.keySet());
      DeadLetter dead = dlq.list(DeadLetterQuery.all()).get(0);
      assertThat(dead.messageId()).isEqualTo(b1);
      assertThat(dead.message().id()).isEqualTo(b1);
      assertThat(dlq.find(dead.id())).map(DeadLetter::messageId).contains(b1);

      poisoned.set(false);
      assertThat(dlq.replay(dead.id())).isPresent();
      Await.until(WAIT, "the replayed b1 handled", () -> succeeded.get("g").contains(b1));
      assertThat(calls.get(b1).get(calls.get(b1).size() - 1).attempt()).isEqualTo(1);
      assertThat(succeeded.get("g")).doesNotHaveDuplicates().hasSize(5);
    } finally {
      topology.delete(admin, destination, "g2", false);
    }
  }

  @Test
  @DisplayName("a CloudEvent and a plain message without message id that RabbitMQ itself"
      + " dead-lettered (x-delivery-limit) are listed with the id and key the handler sees, and"
      + " replay keeps both")
  void brokerDeadLetteredKeepsIdentity() throws Exception {
    InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();
    Map<String, Delivery> other = new ConcurrentHashMap<>();
    subscriber.subscribe(SubscriptionSpec.builder(destination, "g2").inbound(mapping).build(),
        d -> other.put(body(d), d));
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g", mapping,
        io.relaykit.monitor.LifecycleListener.noop(), java.time.InstantSource.system());
    try {
      AMQP.BasicProperties ce = binary("/a", "7").builder().timestamp(Date.from(STAMP)).build();
      publishPlain("rk-1", ce, "ce");
      publishPlain("rk-2", props(null, null), "plain");
      Await.until(WAIT, "both seen by the other group", () -> other.size() == 2);
      String queue = topology.queues(destination, "g").queue();
      try (Connection c = TestBroker.connect(config); Channel ch = c.createChannel()) {
        // A consumer that crashes on every delivery: back to the queue until the broker gives up.
        ch.basicQos(2);
        ch.basicConsume(queue, false, (tag, d) -> ch.basicNack(d.getEnvelope().getDeliveryTag(),
            false, true), tag -> { });
        Await.until(Duration.ofSeconds(60), "the broker dead-lettered both",
            () -> dlq.count(DeadLetterQuery.all()) == 2);
      }
      // Read twice: the first read rewrites what the broker dead-lettered (an entry id added).
      assertThat(dlq.list(DeadLetterQuery.all())).hasSize(2);
      for (DeadLetter d : dlq.list(DeadLetterQuery.all())) {
        Message seen = other.get(d.message().payloadUtf8()).message();
        assertThat(d.messageId()).as(d.message().payloadUtf8()).isEqualTo(seen.id());
        assertThat(d.message().id()).isEqualTo(seen.id());
        assertThat(d.message().key()).isEqualTo(seen.key());
        assertThat(d.message().traceId()).isEqualTo(seen.traceId());
        assertThat(d.reason()).contains("delivery_limit");
      }
      assertThat(other.get("ce").message().id()).isEqualTo(CloudEvents.identity("/a", "7"));
      assertThat(other.get("ce").message().key()).contains("rk-1");
      assertThat(other.get("plain").message().key()).contains("rk-2");

      Map<String, Delivery> replayed = new ConcurrentHashMap<>();
      subscriber.subscribe(spec(mapping), d -> replayed.put(body(d), d));
      for (DeadLetter d : dlq.list(DeadLetterQuery.all())) {
        assertThat(dlq.replay(d.id())).isPresent();
      }
      Await.until(WAIT, "both replayed", () -> replayed.size() == 2);
      for (String body : List.of("ce", "plain")) {
        assertThat(replayed.get(body).message().id()).isEqualTo(other.get(body).message().id());
        assertThat(replayed.get(body).message().key()).isEqualTo(other.get(body).message().key());
      }
    } finally {
      topology.delete(admin, destination, "g2", false);
    }
  }

  @Test
  @DisplayName("a structured CloudEvent's retry copy, dead letter (listed twice: the first read"
      + " rewrites it) and replay carry its data, the payload the handler saw, not the JSON"
      + " event around it; likewise for one RabbitMQ itself dead-lettered")
  void structuredCopiesCarryData() throws Exception {
    InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();
    Map<String, List<Delivery>> calls = new ConcurrentHashMap<>();
    AtomicBoolean poisoned = new AtomicBoolean(true);
    subscriber.subscribe(spec(mapping), d -> {
      calls.computeIfAbsent(d.message().id(), k -> new CopyOnWriteArrayList<>()).add(d);
      if (body(d).equals("s-once") && d.attempt() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
      if (body(d).startsWith("s-always") && poisoned.get()) {
        throw new IllegalStateException("always fails");
      }
    });
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g", mapping,
        io.relaykit.monitor.LifecycleListener.noop(), java.time.InstantSource.system());
    AMQP.BasicProperties structured = new AMQP.BasicProperties.Builder()
        .contentType("application/cloudevents+json").timestamp(Date.from(STAMP)).build();
    publishPlain("k", structured, structured("/a", "once", "s-once"));
    publishPlain("k", structured, structured("/a", "always", "s-always"));
    String once = CloudEvents.identity("/a", "once");
    String always = CloudEvents.identity("/a", "always");
    Await.until(WAIT, "s-once retried", () -> calls.getOrDefault(once, List.of()).size() == 2);
    Await.until(WAIT, "s-always dead-lettered", () -> dlq.count(DeadLetterQuery.all()) == 1);
    assertThat(calls.get(once)).extracting(Delivery::attempt).containsExactly(1, 2);
    assertThat(calls.get(once)).extracting(d -> body(d)).containsOnly("s-once");
    assertThat(calls.get(always)).extracting(d -> body(d)).containsOnly("s-always");
    for (int read = 0; read < 2; read++) {
      DeadLetter dead = dlq.list(DeadLetterQuery.all()).get(0);
      assertThat(dead.messageId()).isEqualTo(always);
      assertThat(dead.message().payloadUtf8()).as("read " + read).isEqualTo("s-always");
    }
    poisoned.set(false);
    DeadLetter dead = dlq.list(DeadLetterQuery.all()).get(0);
    assertThat(dlq.replay(dead.id())).isPresent();
    Await.until(WAIT, "the replay handled", () -> calls.get(always).size() == 4);
    assertThat(calls.get(always).get(3).message().payloadUtf8()).isEqualTo("s-always");
    assertThat(calls.get(always).get(3).message().id()).isEqualTo(always);

    // One RabbitMQ dead-lettered itself (x-delivery-limit), read twice.
    String queue = topology.queues(destination, "g").queue();
    subscriber.close();
    dlq.purge(DeadLetterQuery.all());
    publishPlain("k", structured, structured("/b", "crash", "s-crash"));
    try (Connection c = TestBroker.connect(config); Channel ch = c.createChannel()) {
      ch.basicQos(1);
      ch.basicConsume(queue, false, (tag, d) -> ch.basicNack(d.getEnvelope().getDeliveryTag(),
          false, true), tag -> { });
      Await.until(Duration.ofSeconds(60), "the broker dead-lettered it",
          () -> dlq.count(DeadLetterQuery.all()) == 1);
    }
    for (int read = 0; read < 2; read++) {
      DeadLetter crashed = dlq.list(DeadLetterQuery.all()).get(0);
      assertThat(crashed.messageId()).isEqualTo(CloudEvents.identity("/b", "crash"));
      assertThat(crashed.message().payloadUtf8()).as("read " + read).isEqualTo("s-crash");
    }
  }

  private static String structured(String source, String id, String data) {
    return "{\"specversion\":\"1.0\",\"id\":\"" + id + "\",\"source\":\"" + source
        + "\",\"type\":\"t\",\"data\":\"" + data + "\"}";
  }

  private static AMQP.BasicProperties binary(String source, String id) {
    Map<String, Object> h = new HashMap<>();
    h.put("cloudEvents_specversion", "1.0");
    h.put("cloudEvents_id", id);
    h.put("cloudEvents_source", source);
    h.put("cloudEvents_type", "t");
    return new AMQP.BasicProperties.Builder().headers(h).build();
  }
}

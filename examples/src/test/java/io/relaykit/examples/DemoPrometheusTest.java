package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.Await;
import io.relaykit.tck.ForwardingOutboxStore;
import io.relaykit.transport.kafka.KafkaTestBroker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /metrics/prometheus}: relaykit-micrometer's binder on the demo's Prometheus registry,
 * scraped over HTTP after {@value #ORDERS} orders that succeed and one poison order: exact values
 * for every stage of both effects' messages, the handler and confirm timers, the outbox gauges,
 * the verdict and the dead-letter depth, on the in-process transport and on Kafka (the in-JVM
 * KRaft broker of transport-kafka's test jar, wired through Guice: the demo's binder reaches the
 * Kafka transport as the injector's LifecycleListener and MetricsListener), where the consumer
 * lag per partition drains back to 0 too; and the dead-letter gauge dropping while a replayed
 * dead letter waits in the outbox.
 */
class DemoPrometheusTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String POISON = "POISON";
  private static final int ORDERS = 3;
  /** Messages per effect: one per order. */
  private static final int MESSAGES = ORDERS + 1;
  /** OpenTelemetry's messaging attributes as Prometheus labels: the binder's tag keys. */
  private static final String DEST = "messaging_destination_name";
  private static final String GROUP = "messaging_consumer_group_name";
  private static final String PARTITION = "messaging_destination_partition_id";
  private static final String SYSTEM = "messaging_system";

  private RunningDemo demo;
  private DemoHttp http;

  /**
   * One demo, started once, and the orders placed before the first case; the cases that hold on
   * every transport. A subclass per transport.
   */
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  abstract class Demo {

    abstract RunningDemo start(Path data) throws Exception;

    /** The transport's {@code messaging.system}. */
    abstract String system();

    @Test
    @DisplayName("every relaykit series carries the transport's messaging_system")
    void messagingSystem() {
      awaitStages(ORDERS, "acked");
      List<Sample> relaykit = scrape().stream().filter(x -> x.name.startsWith("relaykit_"))
          .toList();
      assertThat(relaykit).as("relaykit series").hasSizeGreaterThan(10)
          .allSatisfy(x -> assertThat(x.labels.get(SYSTEM)).as(x.name + x.labels)
              .isEqualTo(system()));
    }

    @BeforeAll
    void startAndOrder(@TempDir Path data) throws Exception {
      demo = start(data);
      http = demo.http();
      for (String id : http.placeOrders("book", ORDERS)) {
        http.awaitStatus(id, "SUCCESS", WAIT);
      }
      demo.orderFailsAsPoison(POISON, WAIT);
    }

    @AfterAll
    void stop() {
      if (demo != null) {
        demo.close();
      }
    }

    @Test
    @DisplayName("every stage of both effects' messages and the handler timer are exact")
    void consumeSide() {
      awaitStages(ORDERS, "acked");
      awaitStages(1, "dead_lettered");
      List<Sample> scrape = scrape();
      for (Orders.Effect effect : Orders.Effect.values()) {
        String d = effect.destination();
        assertThat(value(scrape, "relaykit_messages_total", DEST, d, "stage", "delivered"))
            .as(d + " delivered").isEqualTo(MESSAGES);
        assertThat(value(scrape, "relaykit_messages_total", DEST, d, "stage", "acked"))
            .as(d + " acked").isEqualTo(ORDERS);
        assertThat(value(scrape, "relaykit_messages_total", DEST, d,
            "stage", "dead_lettered")).as(d + " dead-lettered").isEqualTo(1);
        for (String none : List.of("retried", "expired", "replayed")) {
          assertThat(value(scrape, "relaykit_messages_total", DEST, d, "stage", none))
              .as(d + " " + none).isZero();
        }
        assertThat(value(scrape, "relaykit_handler_duration_seconds_count", DEST, d,
            GROUP, effect.group(), "outcome", "success")).as(d + " handler successes")
            .isEqualTo(ORDERS);
        assertThat(value(scrape, "relaykit_handler_duration_seconds_count", DEST, d,
            GROUP, effect.group(), "outcome", "failure")).as(d + " handler failures")
            .isEqualTo(1);
      }
      assertThat(scrape).as("every relaykit_messages_total series is under a destination the demo"
          + " publishes to").filteredOn(s -> s.name.equals("relaykit_messages_total"))
          .allSatisfy(s -> assertThat(s.labels.get(DEST)).isIn("orders.sms",
              "orders.coupon"));
    }

    @Test
    @DisplayName("the dead-letter gauge reads the dead letters the demo's store holds: the poison"
        + " order's message of each effect")
    void deadLetterDepth() {
      Sample depth = Await.value(WAIT, "the relay counted both dead letters",
          () -> find(scrape(), "relaykit_dead_letters", DEST, "all"),
          x -> x != null && x.value == Orders.Effect.values().length);
      assertThat(depth.value).isEqualTo(demo.app().deadLetters(100).size());
      assertThat(scrape()).filteredOn(x -> x.name.equals("relaykit_dead_letters"))
          .as("one total, no series per destination").hasSize(1);
    }

    /** Waits until every effect shows at least {@code n} at each of {@code stages}. */
    List<Sample> awaitStages(double n, String... stages) {
      return Await.value(WAIT, "every effect at >= " + n + " for " + List.of(stages),
          DemoPrometheusTest.this::scrape, s -> Arrays.stream(Orders.Effect.values()).allMatch(
              e -> Arrays.stream(stages).allMatch(stage -> {
                Sample x = find(s, "relaykit_messages_total", DEST, e.destination(),
                    "stage", stage);
                return x != null && x.value >= n;
              })));
    }

    @Test
    @DisplayName("each message is enqueued, published and confirmed exactly once, though the relay"
        + " and the publisher both report publishing")
    void publishSide() {
      awaitStages(MESSAGES, "enqueued", "published", "confirmed");
      List<Sample> scrape = Await.value(WAIT, "every confirm timed", DemoPrometheusTest.this::scrape,
          s -> Arrays.stream(Orders.Effect.values()).allMatch(e -> {
            Sample x = find(s, "relaykit_publish_confirm_duration_seconds_count", DEST,
                e.destination());
            return x != null && x.value >= MESSAGES;
          }));
      for (Orders.Effect effect : Orders.Effect.values()) {
        String d = effect.destination();
        for (String stage : List.of("enqueued", "published", "confirmed")) {
          assertThat(value(scrape, "relaykit_messages_total", DEST, d, "stage", stage))
              .as(d + " " + stage).isEqualTo(MESSAGES);
        }
        assertThat(value(scrape, "relaykit_publish_confirm_duration_seconds_count",
            DEST, d)).as(d + " confirm timer").isEqualTo(MESSAGES);
      }
      assertThat(scrape).as("no series refused").filteredOn(
          s -> s.name.equals("relaykit_meters_overflow_total")).isNotEmpty()
          .allSatisfy(s -> assertThat(s.value).isZero());
    }

    @Test
    @DisplayName("the outbox gauges drain to zero and the verdict gauge is the relay's verdict")
    void outboxGaugesAndVerdict() {
      List<Sample> scrape = Await.value(WAIT, "outbox backlog sampled at 0",
          DemoPrometheusTest.this::scrape, s -> {
            Sample x = find(s, "relaykit_outbox_backlog", DEST, "outbox");
            return x != null && x.value == 0;
          });
      assertThat(value(scrape, "relaykit_outbox_oldest_age_seconds", DEST, "outbox"))
          .isZero();
      assertThat(scrape).filteredOn(x -> x.name.equals("relaykit_outbox_backlog"))
          .as("only the outbox reports a backlog, never a consumer")
          .extracting(x -> x.labels.get(DEST)).containsExactly("outbox");
      // The relay samples once a second: read its verdict on both sides of a scrape until they
      // agree, so a sample between them cannot make the comparison flaky.
      int[] seen = new int[2];
      List<Sample> agreed = Await.value(WAIT, "a scrape between two equal relay verdicts", () -> {
        seen[0] = RelayKitMeterBinder.verdictValue(demo.app().relayBacklog().verdict());
        List<Sample> s = scrape();
        seen[1] = RelayKitMeterBinder.verdictValue(demo.app().relayBacklog().verdict());
        return s;
      }, s -> seen[0] == seen[1]);
      assertThat(value(agreed, "relaykit_backlog_verdict", DEST, "outbox", GROUP, "relay"))
          .as("verdict gauge").isEqualTo(seen[0]);
    }
  }

  @Nested
  @DisplayName("Kafka transport")
  class Kafka extends Demo {
    @Override
    RunningDemo start(Path data) throws Exception {
      return RunningDemo.start(options(data, "kafka"),
          Map.of(CheckoutApp.KAFKA_BOOTSTRAP, KafkaTestBroker.bootstrapServers()));
    }

    @Override
    String system() {
      return "kafka";
    }

    @Test
    @DisplayName("each effect's consumer lag drains to 0 on each of its 4 partitions, nothing in"
        + " flight")
    void partitionLag() {
      // Lag and in-flight are sampled once per commit interval: wait for a sample with both at 0.
      List<Sample> scrape = Await.value(WAIT, "every partition's lag and the in-flight gauge"
          + " sampled at 0", DemoPrometheusTest.this::scrape, s -> Arrays.stream(
              Orders.Effect.values()).allMatch(e -> s.stream().filter(x -> x.name.equals(
                  "relaykit_consumer_lag")
                  && e.destination().equals(x.labels.get(DEST))
                  && e.group().equals(x.labels.get(GROUP)))
                  .filter(x -> x.value == 0).count() == 4
              && s.stream().anyMatch(x -> x.name.equals("relaykit_consumer_in_flight")
                  && e.destination().equals(x.labels.get(DEST)) && x.value == 0)));
      for (Orders.Effect effect : Orders.Effect.values()) {
        String d = effect.destination();
        for (int p = 0; p < 4; p++) {
          assertThat(value(scrape, "relaykit_consumer_lag", DEST, d, GROUP,
              effect.group(), PARTITION, String.valueOf(p))).as(d + " partition " + p)
              .isZero();
        }
        assertThat(value(scrape, "relaykit_consumer_in_flight", DEST, d, GROUP,
            effect.group())).as(d + " in flight").isZero();
      }
    }
  }

  @Nested
  @DisplayName("memory transport")
  class InProcess extends Demo {
    @Override
    RunningDemo start(Path data) throws Exception {
      return RunningDemo.start(options(data, "memory"));
    }

    @Override
    String system() {
      return "relaykit-inprocess";
    }

    @Test
    @DisplayName("answers the Prometheus text format 0.0.4, or OpenMetrics when the Accept asks")
    void formats() throws IOException {
      DemoHttp.Answer text = http.get("/metrics/prometheus");
      assertThat(text.status()).isEqualTo(200);
      assertThat(text.header("Content-Type")).isEqualTo(CheckoutApp.PROMETHEUS_TEXT)
          .startsWith("text/plain; version=0.0.4");
      assertThat(text.raw().body()).contains("# TYPE relaykit_messages_total counter");
      DemoHttp.Answer open = http.send(HttpRequest.newBuilder(
          http.base.resolve("/metrics/prometheus"))
          .header("Accept", "application/openmetrics-text; version=1.0.0").GET());
      assertThat(open.status()).isEqualTo(200);
      assertThat(open.header("Content-Type")).startsWith("application/openmetrics-text");
      assertThat(open.raw().body()).contains("# TYPE relaykit_messages counter").endsWith("# EOF\n");
      assertThat(http.post("/metrics/prometheus", null, "").status()).isEqualTo(405);
    }
  }

  /**
   * The dead-letter gauge after a replay: the relay is held back (its claims find nothing) while
   * a replayed dead letter waits in the outbox, so the gauge shows one fewer, then, released, the
   * poison message dead-letters again.
   */
  @Nested
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  @DisplayName("dead-letter gauge and replay, memory transport")
  class Replay {
    private volatile boolean relayHeld;
    private static final int POISON_ORDERS = 2;

    @BeforeAll
    void startAndDeadLetter(@TempDir Path data) throws Exception {
      demo = RunningDemo.start(options(data, "memory"), Map.of(), new CheckoutApp.Tuning(
          CheckoutApp.Tuning.DEFAULTS.samplePeriod(), CheckoutApp.Tuning.DEFAULTS.backlog(),
          store -> new ForwardingOutboxStore(store) {
            @Override
            public List<OutboxRecord> claim(String owner, int max, Duration lease,
                Instant now) {
              return relayHeld ? List.of() : super.claim(owner, max, lease, now);
            }

            @Override
            public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
                Instant now) {
              return relayHeld ? List.of() : super.claim(owner, max, maxRun, lease, now);
            }
          }));
      http = demo.http();
      for (int i = 0; i < POISON_ORDERS; i++) {
        demo.orderFailsAsPoison(POISON, WAIT);
      }
    }

    @AfterAll
    void stop() {
      if (demo != null) {
        demo.close();
      }
    }

    private double deadLetterGauge(double expected, String why) {
      return Await.value(WAIT, why, () -> find(scrape(), "relaykit_dead_letters", DEST,
          "all"), x -> x != null && x.value == expected).value;
    }

    @Test
    @DisplayName("reads N after N dead letters, N - 1 while a replayed one waits in the outbox,"
        + " and N again once it dead-letters anew")
    void dropsAfterReplay() {
      int n = POISON_ORDERS * Orders.Effect.values().length;
      assertThat(deadLetterGauge(n, "the gauge at " + n)).isEqualTo(n);
      assertThat(demo.app().deadLetters(100)).hasSize(n);

      relayHeld = true;
      DeadLetter replayed = demo.app().deadLetters(100).get(0);
      assertThat(demo.app().replay(replayed.id())).isPresent();
      assertThat(deadLetterGauge(n - 1, "the gauge one lower after the replay")).isEqualTo(n - 1);
      Sample waiting = Await.value(WAIT, "the replayed message waits in the outbox",
          () -> find(scrape(), "relaykit_outbox_backlog", DEST, "outbox"),
          x -> x != null && x.value == 1);
      assertThat(waiting.value).isEqualTo(1);

      relayHeld = false;
      assertThat(deadLetterGauge(n, "the poison message dead-lettered again")).isEqualTo(n);
    }
  }

  private static DemoOptions options(Path data, String transport) {
    return new DemoOptions("127.0.0.1", 0, data, "h2", transport, 0, POISON,
        Duration.ofSeconds(2));
  }

  // ---- the scrape, parsed ----------------------------------------------------------------------

  /** One line of the text format: name, labels, value. */
  record Sample(String name, Map<String, String> labels, double value) {}

  private static final Pattern LINE = Pattern.compile(
      "([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+\\S+)?");
  private static final Pattern LABEL =
      Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

  private String rawScrape() {
    DemoHttp.Answer a;
    try {
      a = http.get("/metrics/prometheus");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(a.status()).isEqualTo(200);
    return a.raw().body();
  }

  private List<Sample> scrape() {
    List<Sample> samples = new ArrayList<>();
    for (String line : rawScrape().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      Matcher m = LINE.matcher(line);
      assertThat(m.matches()).as("a sample line: " + line).isTrue();
      Map<String, String> labels = new LinkedHashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
    }
    return samples;
  }

  /** The sample named {@code name} whose labels are exactly {@code labels}; null if none. */
  private static Sample find(List<Sample> scrape, String name, String... labels) {
    Map<String, String> want = new LinkedHashMap<>();
    for (int i = 0; i < labels.length; i += 2) {
      want.put(labels[i], labels[i + 1]);
    }
    // Exactly these labels besides messaging_system, which every series has (messagingSystem()).
    return scrape.stream().filter(s -> s.name.equals(name) && withoutSystem(s.labels).equals(want))
        .findFirst().orElse(null);
  }

  private static Map<String, String> withoutSystem(Map<String, String> labels) {
    Map<String, String> rest = new LinkedHashMap<>(labels);
    rest.remove(SYSTEM);
    return rest;
  }

  private static double value(List<Sample> scrape, String name, String... labels) {
    Sample s = find(scrape, name, labels);
    assertThat(s).as(name + " " + List.of(labels) + " in the scrape; relaykit series: "
        + scrape.stream().filter(x -> x.name.startsWith("relaykit_"))
            .map(x -> x.name + x.labels + "=" + x.value).collect(Collectors.joining(", ")))
        .isNotNull();
    return s.value;
  }

  /** How many destinations show exactly {@code n} for {@code stage}. */
  private static long countWhere(List<Sample> scrape, String stage, double n) {
    return scrape.stream().filter(s -> s.name.equals("relaykit_messages_total")
        && stage.equals(s.labels.get("stage")) && s.value == n).count();
  }
}

package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.MetricsListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The binder's names, bounds and meter values, driven by direct SPI calls. */
class RelayKitMeterBinderTest {

  /** OpenTelemetry's messaging attribute names, the binder's tag keys. */
  static final String DESTINATION = "messaging.destination.name";
  static final String GROUP = "messaging.consumer.group.name";
  static final String PARTITION = "messaging.destination.partition.id";

  private static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private RelayKitMeterBinder bound(RelayKitMeterBinder.Builder b) {
    RelayKitMeterBinder binder = b.build();
    binder.bindTo(registry);
    return binder;
  }

  private static LifecycleEvent event(Stage stage, String where) {
    return new LifecycleEvent(stage, "m-1", null, where, T0, "");
  }

  private double messages(String destination, Stage stage) {
    return registry.get("relaykit.messages").tags(DESTINATION, destination,
        "stage", RelayKitMeterBinder.stage(stage)).counter().count();
  }

  @Nested
  @DisplayName("names")
  class Names {

    @Test
    @DisplayName("the defaults are relaykit.<suffix>, pinned here")
    void defaults() {
      RelayKitMeterBinder binder = RelayKitMeterBinder.builder().build();
      assertThat(List.of(RelayKitMeter.values()).stream().map(binder::name).toList())
          .containsExactly("relaykit.outbox.backlog", "relaykit.outbox.oldest.age",
              "relaykit.outbox.claim.heads.walked", "relaykit.outbox.claim.rows.walked",
              "relaykit.consumer.lag", "relaykit.consumer.in.flight",
              "relaykit.consumer.in.flight.oldest.age", "relaykit.consumer.failed",
              "relaykit.messages", "relaykit.dead.lettered", "relaykit.messages.dropped", "relaykit.messages.ignored",
              "relaykit.handler.duration", "relaykit.publish.confirm.duration",
              "relaykit.report.queue.depth", "relaykit.report.queue.bytes",
              "relaykit.report.queue.dropped", "relaykit.dead.letters",
              "relaykit.backlog.verdict", "relaykit.share.acknowledged", "relaykit.share.renewed",
              "relaykit.share.lock.lost", "relaykit.console.actions",
              "relaykit.console.dead.letters", "relaykit.meters.overflow");
    }

    @Test
    @DisplayName("a prefix renames every meter, a per-meter name wins over it")
    void overrides() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder().prefix("shop.rk")
          .name(RelayKitMeter.CONSUMER_LAG, "shop.kafka.lag"));
      binder.backlogDepth("outbox", 7);
      binder.consumerLag("orders", "billing", 3);

      assertThat(registry.get("shop.rk.outbox.backlog").tag(DESTINATION, "outbox").gauge()
          .value()).isEqualTo(7);
      assertThat(registry.get("shop.kafka.lag").tags(GROUP, "billing", PARTITION, "all")
          .gauge().value()).isEqualTo(3);
      assertThat(registry.find("relaykit.outbox.backlog").meters()).isEmpty();
    }

    @Test
    @DisplayName("every meter carries messaging.system, and tag keys are OpenTelemetry's messaging"
        + " attribute names or relaykit's own (stage, reason, outcome, queue, store, meter), pinned"
        + " here")
    void tagKeys() {
      assertThat(List.of(RelayKitMeter.SYSTEM_TAG, RelayKitMeter.DESTINATION_TAG,
          RelayKitMeter.GROUP_TAG, RelayKitMeter.PARTITION_TAG)).containsExactly(
          "messaging.system", DESTINATION, GROUP, PARTITION);
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder().messagingSystem("kafka"));
      assertThat(binder.messagingSystem()).isEqualTo("kafka");
      binder.backlogDepth("outbox", 1);
      binder.oldestAge("outbox", Duration.ofSeconds(1));
      binder.outboxClaimWalked("relaykit_outbox", 3, 5);
      binder.consumerLag("q", "g", 1);
      binder.partitionLag("t", "g", 3, 1);
      binder.inFlight("t", "g", 1);
      binder.oldestInFlightAge("t", "g", Duration.ofSeconds(1));
      binder.handlerDuration("t", "g", Duration.ofMillis(1), false);
      binder.handlerTimedOut("t", "g", Duration.ofMillis(1));
      binder.publishConfirmDuration("t", Duration.ofMillis(1));
      binder.deadLetterDepth("t", 1);
      binder.dropped("t", "expired", 1);
      binder.ignored("t", MetricsListener.IGNORED_TRACEPARENT, 1);
      binder.backlog("t", "g", new BacklogSnapshot(BacklogVerdict.HEALTHY, null, 0, Duration.ZERO,
          0, Duration.ZERO, 0));
      binder.consumerFailed("t", "g", new IllegalStateException("fenced"));
      binder.deadLettered("t", "g");
      binder.shareAcknowledged("t", "g", "accept", 2);
      binder.shareRenewed("t", "g", 1);
      binder.shareLockLost("t", "g", 1);
      binder.consoleAction("replay-one", "ok", 1);
      binder.on(event(Stage.ACKED, "t"));
      io.relaykit.queue.ReportQueue queue = io.relaykit.queue.ReportQueue.builder()
          .journal(new io.relaykit.queue.InMemoryJournal()).build();
      queue.restore();
      binder.reportQueue("client", queue);

      assertThat(registry.getMeters().stream().map(m -> m.getId().getName()).distinct())
          .as("every meter was registered").hasSize(RelayKitMeter.values().length);
      assertThat(registry.getMeters()).allSatisfy(m -> {
        assertThat(m.getId().getTag("messaging.system")).as(m.getId().toString())
            .isEqualTo("kafka");
        assertThat(m.getId().getTags()).extracting(io.micrometer.core.instrument.Tag::getKey)
            .as(m.getId().toString()).isSubsetOf("messaging.system", DESTINATION, GROUP,
                PARTITION, "stage", "reason", "outcome", "queue", "store", "meter", "type",
                "action");
      });
      assertThat(registry.get("relaykit.consumer.lag").tags(DESTINATION, "t", GROUP, "g",
          PARTITION, "3").gauge().value()).isEqualTo(1);
      assertThat(RelayKitMeterBinder.builder().build().messagingSystem()).isEqualTo("unknown");
    }

    @Test
    @DisplayName("bad builder values are refused, naming the value")
    void badValues() {
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().prefix("rk."))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("\"rk.\"");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().maxSeriesPerMeter(0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 0");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().percentiles(1.5))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1.5");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().name(RelayKitMeter.MESSAGES, " "))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MESSAGES");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().messagingSystem(" "))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("messagingSystem");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().messagingSystem("x".repeat(65)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("64");
      assertThatThrownBy(() -> RelayKitMeterBinder.builder().messagingSystem(null))
          .isInstanceOf(NullPointerException.class).hasMessageContaining("system");
    }

    @Test
    @DisplayName("a second registry is refused; the same one again is a no-op")
    void oneRegistry() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.bindTo(registry);
      assertThatThrownBy(() -> binder.bindTo(new SimpleMeterRegistry()))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("CompositeMeterRegistry");
    }
  }

  @Nested
  @DisplayName("share groups")
  class ShareCounters {

    @Test
    @DisplayName("acknowledgements count by type (an unknown type under 'unknown'), renewals and"
        + " lock losses per destination and group")
    void countsByTypeAndGroup() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.shareAcknowledged("orders", "billing", "accept", 3);
      binder.shareAcknowledged("orders", "billing", "release", 1);
      binder.shareAcknowledged("orders", "billing", "reject", 2);
      binder.shareAcknowledged("orders", "billing", "forged-" + "x".repeat(100), 1);
      binder.shareRenewed("orders", "billing", 2);
      binder.shareRenewed("orders", "billing", 1);
      binder.shareLockLost("orders", "billing", 1);

      for (var e : java.util.Map.of("accept", 3.0, "release", 1.0, "reject", 2.0, "unknown", 1.0)
          .entrySet()) {
        assertThat(registry.get("relaykit.share.acknowledged").tags(DESTINATION, "orders", GROUP,
            "billing", "type", e.getKey()).counter().count()).as(e.getKey())
            .isEqualTo(e.getValue());
      }
      assertThat(registry.get("relaykit.share.renewed").tags(DESTINATION, "orders", GROUP,
          "billing").counter().count()).isEqualTo(3);
      assertThat(registry.get("relaykit.share.lock.lost").tags(DESTINATION, "orders", GROUP,
          "billing").counter().count()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("console actions")
  class ConsoleActions {

    @Test
    @DisplayName("each action counts once by action and outcome, and its dead letters by action")
    void countsActionsAndDeadLetters() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.consoleAction("replay-set", "ok", 100);
      binder.consoleAction("replay-set", "failed", 3);
      binder.consoleAction("purge-one", "ok", 1);
      assertThat(registry.get("relaykit.console.actions").tags("action", "replay-set", "outcome",
          "ok").counter().count()).isEqualTo(1);
      assertThat(registry.get("relaykit.console.actions").tags("action", "replay-set", "outcome",
          "failed").counter().count()).isEqualTo(1);
      assertThat(registry.get("relaykit.console.dead.letters").tags("action", "replay-set")
          .counter().count()).isEqualTo(103);
      assertThat(registry.get("relaykit.console.dead.letters").tags("action", "purge-one")
          .counter().count()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("dead letters")
  class DeadLettered {

    @Test
    @DisplayName("each dead letter counts once per destination and group, none without a group")
    void countsPerDestinationAndGroup() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.deadLettered("orders", "billing");
      binder.deadLettered("orders", "billing");
      binder.deadLettered("orders", "audit");
      binder.deadLettered("orders", null);

      assertThat(registry.get("relaykit.dead.lettered").tags(DESTINATION, "orders", GROUP,
          "billing").counter().count()).isEqualTo(2);
      assertThat(registry.get("relaykit.dead.lettered").tags(DESTINATION, "orders", GROUP,
          "audit").counter().count()).isEqualTo(1);
      assertThat(registry.get("relaykit.dead.lettered").tags(DESTINATION, "orders", GROUP,
          "none").counter().count()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("bounds")
  class Bounds {

    @Test
    @DisplayName("over the cap a new tag combination is not registered and counts in"
        + " relaykit.meters.overflow; known series still count")
    void overflow() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder().maxSeriesPerMeter(2));
      for (int i = 0; i < 5; i++) {
        binder.on(event(Stage.ACKED, "d" + i));
      }
      binder.on(event(Stage.ACKED, "d0"));
      for (int i = 0; i < 4; i++) {
        binder.dropped("q", "reason-" + i, 1);
      }

      assertThat(registry.find("relaykit.messages").tag("stage", "acked").counters()).hasSize(2);
      assertThat(messages("d0", Stage.ACKED)).isEqualTo(2);
      assertThat(messages("d1", Stage.ACKED)).isEqualTo(1);
      assertThat(registry.get("relaykit.meters.overflow").tag("meter", "relaykit.messages")
          .counter().count()).isEqualTo(3);
      assertThat(registry.get("relaykit.meters.overflow")
          .tag("meter", "relaykit.messages.dropped").counter().count()).isEqualTo(2);
      assertThat(registry.find("relaykit.messages.dropped").counters()).hasSize(2);
    }

    @Test
    @DisplayName("a series the registry refuses (a MeterFilter that throws) is asked for once:"
        + " later calls count in relaykit.meters.overflow, other series still register")
    void registryRefusalIsNotRetried() {
      java.util.concurrent.atomic.AtomicInteger asked =
          new java.util.concurrent.atomic.AtomicInteger();
      registry.config().meterFilter(new io.micrometer.core.instrument.config.MeterFilter() {
        @Override
        public io.micrometer.core.instrument.Meter.Id map(
            io.micrometer.core.instrument.Meter.Id id) {
          if (id.getName().equals("relaykit.messages") && "refused".equals(
              id.getTag(RelayKitMeter.DESTINATION_TAG))) {
            asked.incrementAndGet();
            throw new IllegalStateException("this registry refuses destination refused");
          }
          return id;
        }
      });
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      for (int i = 0; i < 3; i++) {
        binder.on(event(Stage.ACKED, "refused"));
      }
      binder.on(event(Stage.ACKED, "fine"));

      assertThat(asked).as("registration attempts of the refused series").hasValue(1);
      assertThat(registry.get("relaykit.meters.overflow").tag("meter", "relaykit.messages")
          .counter().count()).isEqualTo(3);
      assertThat(messages("fine", Stage.ACKED)).isEqualTo(1);
    }

    @Test
    @DisplayName("a long reason is cut to 64 characters; a blank tag value becomes unknown")
    void reasonsAndBlanks() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.dropped("q", "x".repeat(500), 2);
      binder.inFlight(" ", "g", 4);

      assertThat(registry.get("relaykit.messages.dropped").tag("reason", "x".repeat(64))
          .counter().count()).isEqualTo(2);
      assertThat(registry.get("relaykit.consumer.in.flight").tag(DESTINATION, "unknown")
          .gauge().value()).isEqualTo(4);
    }

    @Test
    @DisplayName("calls before bindTo are ignored, not buffered")
    void beforeBind() {
      RelayKitMeterBinder binder = RelayKitMeterBinder.builder().build();
      binder.on(event(Stage.ACKED, "orders"));
      binder.backlogDepth("outbox", 3);
      binder.bindTo(registry);
      binder.on(event(Stage.ACKED, "orders"));

      assertThat(messages("orders", Stage.ACKED)).isEqualTo(1);
      assertThat(registry.find("relaykit.outbox.backlog").meters()).isEmpty();
    }
  }

  @Nested
  @DisplayName("values")
  class Values {

    @Test
    @DisplayName("every stage but DROPPED counts in relaykit.messages; DROPPED counts by reason")
    void stages() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      for (Stage s : Stage.values()) {
        binder.on(event(s, "orders"));
      }
      binder.dropped("orders", "expired", 3);

      for (Stage s : Stage.values()) {
        if (s != Stage.DROPPED) {
          assertThat(messages("orders", s)).as(s.name()).isEqualTo(1);
        }
      }
      assertThat(registry.find("relaykit.messages").tag("stage", "dropped").counters()).isEmpty();
      assertThat(registry.get("relaykit.messages.dropped").tags(DESTINATION, "orders",
          "reason", "expired").counter().count()).isEqualTo(3);
    }

    @Test
    @DisplayName("the relay's listener counts every step but PUBLISHED and CONFIRMED, which the"
        + " publisher reports for the same message")
    void relayListener() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      assertThat(binder.relayListener()).isSameAs(binder.relayListener());
      for (Stage s : Stage.values()) {
        binder.relayListener().on(event(s, "orders"));
      }
      binder.on(event(Stage.PUBLISHED, "orders"));
      binder.on(event(Stage.CONFIRMED, "orders"));

      for (Stage s : Stage.values()) {
        if (s != Stage.DROPPED) {
          assertThat(messages("orders", s)).as(s.name()).isEqualTo(1);
        }
      }
    }

    @Test
    @DisplayName("gauges show the latest value; the oldest age is a TimeGauge in the registry's"
        + " base unit; the verdict maps to its documented number")
    void gauges() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.backlogDepth("outbox", 9);
      binder.backlogDepth("outbox", 4);
      binder.oldestAge("outbox", Duration.ofMillis(1500));
      binder.deadLetterDepth("orders", 2);
      binder.backlog("outbox", new BacklogSnapshot(BacklogVerdict.STALLED, T0, 4,
          Duration.ofSeconds(1), 3, Duration.ofSeconds(10), 0.0));

      assertThat(registry.get("relaykit.outbox.backlog").gauge().value()).isEqualTo(4);
      assertThat(registry.get("relaykit.outbox.oldest.age").timeGauge()
          .value(TimeUnit.MILLISECONDS)).isEqualTo(1500);
      assertThat(registry.get("relaykit.dead.letters").tag(DESTINATION, "orders").gauge()
          .value()).isEqualTo(2);
      assertThat(registry.get("relaykit.backlog.verdict").tags(DESTINATION, "outbox", GROUP, "relay")
          .gauge().value()).isEqualTo(3);
      // Two groups on one topic keep a verdict each.
      binder.backlog("orders", "sms", new BacklogSnapshot(BacklogVerdict.STALLED, T0, 4,
          Duration.ofSeconds(1), 3, Duration.ofSeconds(10), 0.0));
      binder.backlog("orders", "coupon", new BacklogSnapshot(BacklogVerdict.HEALTHY, T0, 0,
          Duration.ZERO, 3, Duration.ofSeconds(10), 0.0));
      assertThat(registry.get("relaykit.backlog.verdict").tags(DESTINATION, "orders", GROUP,
          "sms").gauge().value()).isEqualTo(3);
      assertThat(registry.get("relaykit.backlog.verdict").tags(DESTINATION, "orders", GROUP,
          "coupon").gauge().value()).isZero();
      assertThat(List.of(BacklogVerdict.values()).stream()
          .map(RelayKitMeterBinder::verdictValue).toList()).containsExactly(0, 1, 2, 3, 4);
    }

    @Test
    @DisplayName("a consumer's summed lag shows as partition=all until its runtime reports"
        + " partitions, then only the partitions")
    void partitions() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      binder.consumerLag("orders", "billing", 5);
      binder.partitionLag("orders", "billing", 0, 2);
      binder.partitionLag("orders", "billing", 1, 3);
      binder.consumerLag("orders", "billing", 5);

      assertThat(registry.find("relaykit.consumer.lag").tag(PARTITION, "all").gauges())
          .isEmpty();
      assertThat(registry.get("relaykit.consumer.lag").tag(PARTITION, "1").gauge().value())
          .isEqualTo(3);
      assertThat(registry.find("relaykit.consumer.lag").gauges()).hasSize(2);
    }

    @Test
    @DisplayName("timers count each duration by outcome (success, failure, timeout), without"
        + " percentiles unless configured")
    void timers() {
      RelayKitMeterBinder plain = bound(RelayKitMeterBinder.builder());
      plain.handlerDuration("orders", "g", Duration.ofMillis(5), false);
      plain.handlerDuration("orders", "g", Duration.ofMillis(7), true);
      plain.handlerDuration("orders", "g", Duration.ofMillis(9), false);
      plain.handlerTimedOut("orders", "g", Duration.ofMillis(300));
      plain.publishConfirmDuration("orders", Duration.ofMillis(2));

      Timer ok = registry.get("relaykit.handler.duration").tag("outcome", "success").timer();
      assertThat(ok.count()).isEqualTo(2);
      assertThat(ok.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(14);
      assertThat(ok.takeSnapshot().percentileValues()).isEmpty();
      assertThat(registry.get("relaykit.handler.duration").tag("outcome", "failure").timer()
          .count()).isEqualTo(1);
      Timer timedOut = registry.get("relaykit.handler.duration").tags(DESTINATION, "orders",
          GROUP, "g", "outcome", "timeout").timer();
      assertThat(timedOut.count()).isEqualTo(1);
      assertThat(timedOut.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(300);
      assertThat(registry.get("relaykit.publish.confirm.duration").timer().count()).isEqualTo(1);

      SimpleMeterRegistry other = new SimpleMeterRegistry();
      RelayKitMeterBinder withPercentiles = RelayKitMeterBinder.builder().percentiles(0.5, 0.99)
          .build();
      withPercentiles.bindTo(other);
      withPercentiles.handlerDuration("orders", "g", Duration.ofMillis(5), false);
      assertThat(other.get("relaykit.handler.duration").timer().takeSnapshot().percentileValues())
          .hasSize(2);
    }

    @Test
    @DisplayName("the composite listener forwards the new SPI methods")
    void composite() {
      RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
      MetricsListener both = MetricsListener.composite(List.of(MetricsListener.noop(), binder));
      both.partitionLag("t", "g", 0, 4);
      both.inFlight("t", "g", 2);
      both.oldestInFlightAge("t", "g", Duration.ofMillis(700));
      both.handlerDuration("t", "g", Duration.ofMillis(1), false);
      both.handlerTimedOut("t", "g", Duration.ofMillis(1));
      both.publishConfirmDuration("t", Duration.ofMillis(1));

      assertThat(registry.get("relaykit.consumer.lag").gauge().value()).isEqualTo(4);
      assertThat(registry.get("relaykit.consumer.in.flight").gauge().value()).isEqualTo(2);
      assertThat(registry.get("relaykit.consumer.in.flight.oldest.age").tags(DESTINATION, "t",
          GROUP, "g").timeGauge().value(TimeUnit.MILLISECONDS)).isEqualTo(700);
      assertThat(registry.find("relaykit.outbox.backlog").meters()).as("no outbox series").isEmpty();
      assertThat(registry.get("relaykit.handler.duration").tag("outcome", "success").timer()
          .count()).isEqualTo(1);
      assertThat(registry.get("relaykit.handler.duration").tag("outcome", "timeout").timer()
          .count()).isEqualTo(1);
      assertThat(registry.get("relaykit.publish.confirm.duration").timer().count()).isEqualTo(1);
    }
  }

  @Test
  @DisplayName("a report queue's depth, bytes and drops are read from the real queue, and its"
      + " drops by reason arrive through the binder as its metrics listener")
  void reportQueueGauges() {
    RelayKitMeterBinder binder = bound(RelayKitMeterBinder.builder());
    io.relaykit.queue.ReportQueue queue = io.relaykit.queue.ReportQueue.builder()
        .journal(new io.relaykit.queue.InMemoryJournal()).capacity(3)
        .dropPolicy(io.relaykit.queue.DropPolicy.DROP_OLDEST).name("client").metrics(binder)
        .build();
    queue.restore();
    binder.reportQueue("client", queue);
    for (int i = 0; i < 5; i++) {
      queue.enqueue(new io.relaykit.queue.ReportEvent("e-" + i, "page.viewed", "{\"n\":" + i + "}"));
    }
    assertThat(registry.get("relaykit.report.queue.depth").tag("queue", "client").gauge().value())
        .isEqualTo(3.0);
    assertThat(registry.get("relaykit.report.queue.bytes").tag("queue", "client").gauge().value())
        .isEqualTo((double) queue.stats().bytes()).isPositive();
    assertThat(registry.get("relaykit.report.queue.dropped").tag("queue", "client")
        .functionCounter().count()).isEqualTo(2.0);
    assertThat(registry.find("relaykit.messages.dropped").tag(DESTINATION, "client").counters()
        .stream().mapToDouble(io.micrometer.core.instrument.Counter::count).sum())
        .as("drops by reason").isEqualTo(2.0);
  }
}

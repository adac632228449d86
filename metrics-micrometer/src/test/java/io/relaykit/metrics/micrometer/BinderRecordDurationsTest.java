package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** {@link RelayKitMeterBinder.Builder#recordDurations}: timers left to another instrumentation. */
class BinderRecordDurationsTest {

  @Test
  @DisplayName("recordDurations(false): no handler or confirm timer, every other meter recorded")
  void durationsOff() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RelayKitMeterBinder binder = RelayKitMeterBinder.builder().recordDurations(false).build();
    binder.bindTo(registry);
    binder.handlerDuration("orders", "g", Duration.ofMillis(3), false);
    binder.handlerDuration("orders", "g", Duration.ofMillis(3), true);
    binder.handlerTimedOut("orders", "g", Duration.ofSeconds(1));
    binder.publishConfirmDuration("orders", Duration.ofMillis(2));
    binder.deadLettered("orders", "g");

    assertThat(registry.find("relaykit.handler.duration").meters()).isEmpty();
    assertThat(registry.find("relaykit.publish.confirm.duration").meters()).isEmpty();
    assertThat(registry.find("relaykit.meters.overflow").counters())
        .allSatisfy(c -> assertThat(c.count()).isZero());
    assertThat(registry.get("relaykit.dead.lettered").counter().count()).isEqualTo(1);
  }

  @Test
  @DisplayName("by default both timers are recorded")
  void durationsOnByDefault() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RelayKitMeterBinder binder = RelayKitMeterBinder.builder().build();
    binder.bindTo(registry);
    binder.handlerDuration("orders", "g", Duration.ofMillis(3), false);
    binder.publishConfirmDuration("orders", Duration.ofMillis(2));
    assertThat(registry.get("relaykit.handler.duration").timer().count()).isEqualTo(1);
    assertThat(registry.get("relaykit.publish.confirm.duration").timer().count()).isEqualTo(1);
  }
}

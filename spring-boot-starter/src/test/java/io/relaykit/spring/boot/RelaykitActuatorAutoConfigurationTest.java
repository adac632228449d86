package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.ForwardingOutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;

/** The Actuator auto-configuration in real (non-web) contexts, and the indicator on its own. */
class RelaykitActuatorAutoConfigurationTest {

  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  ConfigurableApplicationContext start(String... props) {
    List<String> all = new ArrayList<>(List.of(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.spring.relay.enabled=false"));
    all.addAll(List.of(props));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ActuatorApp.class)
        .web(WebApplicationType.NONE).properties(all.toArray(String[]::new)).run();
    contexts.add(ctx);
    return ctx;
  }

  @AfterEach
  void close() {
    contexts.forEach(ConfigurableApplicationContext::close);
  }

  private static boolean inGroup(ConfigurableApplicationContext ctx, String group) {
    return ctx.getBean(HealthEndpointGroups.class).get(group).isMember("relaykit");
  }

  /** Appends {@code n} rows created at the clock's time and samples five times, 20 s apart. */
  private static Health stallFor(ConfigurableApplicationContext ctx) {
    FakeClock clock = ctx.getBean(FakeClock.class);
    InMemoryOutboxStore outbox = ctx.getBean(InMemoryOutboxStore.class);
    Instant t0 = clock.instant();
    outbox.append("orders", Message.builder().id(unique("m")).type("t").createdAt(t0)
        .payload("{}").build());
    RelaykitBacklogHealthIndicator indicator = ctx.getBean(RelaykitBacklogHealthIndicator.class);
    Health h = null;
    for (int i = 0; i < 5; i++) {
      h = indicator.health();
      clock.advance(Duration.ofSeconds(20));
    }
    return h;
  }

  @Nested
  @DisplayName("health groups")
  class Groups {
    @Test
    @DisplayName("relaykit is in readiness by default and never in liveness")
    void readinessByDefault() {
      ConfigurableApplicationContext ctx = start();
      assertThat(inGroup(ctx, "readiness")).isTrue();
      assertThat(inGroup(ctx, "liveness")).isFalse();
      assertThat(ctx.getBean(HealthEndpointGroups.class).get("readiness")
          .isMember("readinessState")).isTrue();
    }

    @Test
    @DisplayName("the application's own readiness members win")
    void userIncludeWins() {
      ConfigurableApplicationContext ctx = start(
          "management.endpoint.health.group.readiness.include=readinessState,db");
      assertThat(inGroup(ctx, "readiness")).isFalse();
      assertThat(ctx.getBean(HealthEndpointGroups.class).get("readiness").isMember("db"))
          .isTrue();
    }

    @Test
    @DisplayName("the application's readiness excludes win")
    void userExcludeWins() {
      ConfigurableApplicationContext ctx = start(
          "management.endpoint.health.group.readiness.exclude=relaykit");
      assertThat(inGroup(ctx, "readiness")).isFalse();
    }

    @Test
    @DisplayName("relaykit.spring.health.readiness=false keeps it out of readiness")
    void readinessOff() {
      ConfigurableApplicationContext ctx = start("relaykit.spring.health.readiness=false");
      assertThat(inGroup(ctx, "readiness")).isFalse();
      assertThat(ctx.getBeansOfType(RelaykitBacklogHealthIndicator.class)).hasSize(1);
    }

    @Test
    @DisplayName("management.health.relaykit.enabled=false removes the indicator and the group"
        + " change")
    void indicatorDisabled() {
      ConfigurableApplicationContext ctx = start("management.health.relaykit.enabled=false");
      assertThat(ctx.getBeansOfType(RelaykitBacklogHealthIndicator.class)).isEmpty();
      assertThat(inGroup(ctx, "readiness")).isFalse();
    }
  }

  @Test
  @DisplayName("without Actuator on the class path the starter starts without these beans")
  void withoutActuator() {
    new ApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader("org.springframework.boot.health",
            "org.springframework.boot.actuate"))
        .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
            RelaykitActuatorAutoConfiguration.class))
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(TransactionalOutbox.class)
            .doesNotHaveBean(RelaykitBacklogHealthIndicator.class)
            .doesNotHaveBean(RelaykitDeadLettersEndpoint.class));
  }

  @Nested
  @DisplayName("verdict to status")
  class Mapping {
    @Test
    @DisplayName("by default a stall is OUT_OF_SERVICE with the numbers in the details")
    void stallIsOutOfService() {
      Health h = stallFor(start());
      assertThat(h.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(h.getDetails()).containsEntry("verdict", "STALLED").containsEntry("depth", 1L)
          .containsEntry("oldestAge", "PT1M20S").containsEntry("samples", 5);
    }

    @Test
    @DisplayName("the verdict lists are configurable: a stall can be DOWN, or nothing")
    void configurable() {
      assertThat(stallFor(start("relaykit.spring.health.out-of-service=sustained-growth",
          "relaykit.spring.health.down=stalled")).getStatus()).isEqualTo(Status.DOWN);
      Health none = stallFor(start("relaykit.spring.health.out-of-service="));
      assertThat(none.getStatus()).isEqualTo(Status.UP);
      assertThat(none.getDetails()).containsEntry("verdict", "STALLED");
    }

    @Test
    @DisplayName("thresholds come from relaykit.spring.health.*")
    void thresholds() {
      ConfigurableApplicationContext ctx = start("relaykit.spring.health.min-samples=3",
          "relaykit.spring.health.stall-age=30s", "relaykit.spring.health.sample-interval=1s");
      FakeClock clock = ctx.getBean(FakeClock.class);
      ctx.getBean(InMemoryOutboxStore.class).append("orders", Message.builder().id(unique("m"))
          .type("t").createdAt(clock.instant()).payload("{}").build());
      RelaykitBacklogHealthIndicator indicator = ctx.getBean(RelaykitBacklogHealthIndicator.class);
      indicator.health();
      clock.advance(Duration.ofSeconds(20));
      // Within the sample interval: no new sample.
      clock.advance(Duration.ofMillis(10));
      indicator.health();
      clock.advance(Duration.ofMillis(500));
      assertThat(indicator.health().getDetails()).containsEntry("samples", 2);
      clock.advance(Duration.ofSeconds(20));
      Health h = indicator.health();
      assertThat(h.getDetails()).containsEntry("samples", 3).containsEntry("verdict", "STALLED");
      assertThat(h.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
    }

    @Test
    @DisplayName("a bad value fails the start naming the key")
    void badValues() {
      assertThatThrownBy(() -> start("relaykit.spring.health.out-of-service=stalled,slow"))
          .rootCause().hasMessageContaining("relaykit.spring.health.out-of-service")
          .hasMessageContaining("'slow'").hasMessageContaining("sustained-growth");
      assertThatThrownBy(() -> start("relaykit.spring.health.down=healthy"))
          .rootCause().hasMessageContaining("relaykit.spring.health.down");
      assertThatThrownBy(() -> start("relaykit.spring.health.down=stalled"))
          .rootCause().hasMessageContaining("both in relaykit.spring.health.out-of-service");
      assertThatThrownBy(() -> start("relaykit.spring.health.growth-per-second=fast"))
          .rootCause().hasMessageContaining("relaykit.spring.health.growth-per-second");
      assertThatThrownBy(() -> start("relaykit.spring.health.min-samples=2"))
          .rootCause().hasMessageContaining("relaykit.spring.health")
          .hasMessageContaining("minSamples");
    }
  }

  @Nested
  @DisplayName("the indicator on its own")
  class Indicator {
    private final FakeClock clock = new FakeClock();

    @Test
    @DisplayName("an outbox over its bound is OUT_OF_SERVICE at once")
    void overBound() {
      InMemoryOutboxStore store = new InMemoryOutboxStore(clock,
          new OutboxBound(2, OutboxBound.OverBound.ACCEPT));
      for (int i = 0; i < 3; i++) {
        store.append("d", Message.builder().id("m" + i).type("t").payload("{}").build());
      }
      Health h = indicator(store).health();
      assertThat(h.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(h.getDetails()).containsEntry("verdict", "OVER_BOUND")
          .containsEntry("maxUnsent", 2L).containsEntry("depth", 3L);
    }

    @Test
    @DisplayName("a backlog that keeps growing while its head moves is SUSTAINED_GROWTH, which"
        + " the lists map on their own")
    void sustainedGrowth() {
      InMemoryOutboxStore store = new InMemoryOutboxStore(clock);
      RelaykitBacklogHealthIndicator both = indicator(store, EnumSet.of(BacklogVerdict.STALLED,
          BacklogVerdict.SUSTAINED_GROWTH));
      RelaykitBacklogHealthIndicator stallOnly = indicator(store,
          EnumSet.of(BacklogVerdict.STALLED));
      int seq = 0;
      Health h = null;
      Health h2 = null;
      for (int step = 0; step < 6; step++) {
        // 30 in, 10 out per 20 s: +1 message/s, and the oldest row is never older than 20 s.
        for (int i = 0; i < 30; i++) {
          store.append("d", Message.builder().id("m" + seq++).type("t").createdAt(clock.instant())
              .payload("{}").build());
        }
        List<io.relaykit.outbox.OutboxRecord> rows = store.claim("r", 10, Duration.ofMinutes(1),
            clock.instant());
        store.markSent("r", rows.stream().map(io.relaykit.outbox.OutboxRecord::sequence)
            .toList(), clock.instant());
        h = both.health();
        h2 = stallOnly.health();
        clock.advance(Duration.ofSeconds(20));
      }
      assertThat(h.getDetails()).containsEntry("verdict", "SUSTAINED_GROWTH");
      assertThat(h.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(h2.getStatus()).isEqualTo(Status.UP);
      assertThat((Double) h.getDetails().get("depthPerSecond")).isGreaterThan(0.9);
    }

    @Test
    @DisplayName("an outbox that cannot answer is DOWN with the error; the next check asks again")
    void storeFails() {
      InMemoryOutboxStore memory = new InMemoryOutboxStore(clock);
      boolean[] failing = {true};
      ForwardingOutboxStore store = new ForwardingOutboxStore(memory) {
        @Override
        public OutboxStats stats(Instant now) {
          if (failing[0]) {
            throw new IllegalStateException("database unreachable");
          }
          return super.stats(now);
        }
      };
      RelaykitBacklogHealthIndicator indicator = indicator(store);
      Health h = indicator.health();
      assertThat(h.getStatus()).isEqualTo(Status.DOWN);
      assertThat((String) h.getDetails().get("error")).contains("database unreachable");
      failing[0] = false;
      assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
    }

    @Test
    @DisplayName("a clock that goes back costs that sample only")
    void clockBack() {
      Instant[] now = {FakeClock.EPOCH};
      InMemoryOutboxStore store = new InMemoryOutboxStore(clock);
      RelaykitBacklogHealthIndicator indicator = new RelaykitBacklogHealthIndicator(store,
          BacklogMonitor.Config.defaults(), () -> now[0], Duration.ZERO,
          EnumSet.of(BacklogVerdict.STALLED), Set.of());
      indicator.health();
      now[0] = now[0].minusSeconds(60);
      assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
      assertThat(indicator.snapshot().samples()).isEqualTo(1);
      now[0] = FakeClock.EPOCH.plusSeconds(1);
      indicator.health();
      assertThat(indicator.snapshot().samples()).isEqualTo(2);
    }

    private RelaykitBacklogHealthIndicator indicator(io.relaykit.outbox.OutboxStore store) {
      return indicator(store, EnumSet.of(BacklogVerdict.STALLED, BacklogVerdict.OVER_BOUND));
    }

    private RelaykitBacklogHealthIndicator indicator(io.relaykit.outbox.OutboxStore store,
        Set<BacklogVerdict> outOfService) {
      return new RelaykitBacklogHealthIndicator(store, BacklogMonitor.Config.defaults(), clock,
          Duration.ZERO, outOfService, Set.of());
    }
  }
}

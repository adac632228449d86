package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.relaykit.message.Message;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * With the starter's observations on (a Boot context with an {@code ObservationRegistry} and
 * Actuator's meter registry, in-process transport, H2 storage): a handler call past its timeout
 * is timed once, as {@code outcome="timeout"}, and its late return adds nothing; the handler
 * timer of a success, a failure and a timeout carries the binder's tag keys and values (plus
 * Micrometer's {@code error}).
 */
class ObservationTimeoutAndTagsTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String HANDLER = "relaykit.handler.duration";

  private static ConfigurableApplicationContext ctx;
  private static String okDestination;
  private static String failDestination;
  private static String slowDestination;
  private static String group;

  @BeforeAll
  static void start() {
    okDestination = unique("ok");
    failDestination = unique("fail");
    slowDestination = unique("slow");
    group = unique("g");
    ctx = new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE).properties(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.storage=h2",
        "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
        "relaykit.spring.relay.enabled=false",
        "relaykit.retry.max-attempts=1",
        "test.ok=" + okDestination,
        "test.fail=" + failDestination,
        "test.slow=" + slowDestination,
        "test.group=" + group).run();
  }

  @AfterAll
  static void stop() {
    if (ctx != null) {
      Handlers.RELEASE.countDown();
      ctx.close();
    }
  }

  /** Three listeners: one succeeds, one throws, one blocks past its 1s handler timeout. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Handlers.class)
  static class App {
    @Bean
    TestObservationRegistry testObservationRegistry() {
      TestObservationRegistry registry = TestObservationRegistry.create();
      registry.observationConfig().observationHandler(Handlers.SCOPES);
      return registry;
    }
  }

  /** The listeners; the slow one blocks until the test releases it. */
  static class Handlers {
    static final CountDownLatch RELEASE = new CountDownLatch(1);
    static final AtomicInteger SLOW_CALLS = new AtomicInteger();
    static final ScopeCounter SCOPES = new ScopeCounter();

    @RelaykitListener(destination = "${test.ok}", group = "${test.group}")
    void ok(Message m) {
    }

    @RelaykitListener(destination = "${test.fail}", group = "${test.group}")
    void fail(Message m) {
      throw new IllegalStateException("fails: " + m.id());
    }

    @RelaykitListener(destination = "${test.slow}", group = "${test.group}",
        handlerTimeout = "1s")
    void slow(Message m) throws InterruptedException {
      SLOW_CALLS.incrementAndGet();
      RELEASE.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** Counts the handle observations whose scope closed on the handler's thread. */
  static final class ScopeCounter implements ObservationHandler<Observation.Context> {
    final AtomicInteger closed = new AtomicInteger();

    @Override
    public void onScopeClosed(Observation.Context context) {
      if (RelaykitObservations.HANDLE.equals(context.getName())) {
        closed.incrementAndGet();
      }
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
      return true;
    }
  }

  private static void appendAndRelay(String to) {
    TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
    new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class)).executeWithoutResult(
        s -> outbox.append(to, null, new ObservationInProcessTest.Payload(unique("m"))));
    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
  }

  private static Collection<Meter> handlerTimers(String destination) {
    return ctx.getBean(MeterRegistry.class).find(HANDLER)
        .tag("messaging.destination.name", destination).meters();
  }

  private static long count(Collection<Meter> meters) {
    return meters.stream().mapToLong(m -> ((Timer) m).count()).sum();
  }

  @Test
  @DisplayName("a handler call past its timeout is timed once, outcome=timeout, when the timeout"
      + " fires; its late return records nothing more")
  void timeoutIsTimedOnce() {
    int closedBefore = Handlers.SCOPES.closed.get();
    appendAndRelay(slowDestination);
    Await.until(WAIT, "the timed-out call is timed",
        () -> count(handlerTimers(slowDestination)) == 1);
    assertThat(Handlers.SLOW_CALLS.get()).as("one call so far").isEqualTo(1);
    Collection<Meter> timers = handlerTimers(slowDestination);
    assertThat(timers).hasSize(1);
    Timer timeout = (Timer) timers.iterator().next();
    assertThat(timeout.getId().getTag("outcome")).isEqualTo("timeout");
    assertThat(timeout.getId().getTag("error")).isEqualTo("TimeoutException");
    assertThat(timeout.totalTime(TimeUnit.MILLISECONDS)).as("stopped at the timeout, from the"
        + " observation's start (on the handler's thread, a little after the transport's)")
        .isPositive().isLessThan(WAIT.toMillis());

    Handlers.RELEASE.countDown();
    Await.until(WAIT, "the late return closed its scope on the handler's thread",
        () -> Handlers.SCOPES.closed.get() > closedBefore);
    assertThat(handlerTimers(slowDestination)).as("no success or failure series after the return")
        .hasSize(1).allSatisfy(m -> assertThat(((Timer) m).count()).isEqualTo(1));
    assertThat(Handlers.SLOW_CALLS.get()).as("one attempt (max-attempts=1)").isEqualTo(1);
  }

  @Test
  @DisplayName("the handler timer of a success and a failure has every tag of the binder's, with"
      + " its values, plus error")
  void tagsAreTheBinders() {
    appendAndRelay(okDestination);
    appendAndRelay(failDestination);
    Await.until(WAIT, "both calls are timed",
        () -> count(handlerTimers(okDestination)) == 1
            && count(handlerTimers(failDestination)) == 1);

    String system = ctx.getBean(RelayKitMeterBinder.class).messagingSystem();
    RelayKitMeterBinder reference = RelayKitMeterBinder.builder().messagingSystem(system).build();
    SimpleMeterRegistry binderRegistry = new SimpleMeterRegistry();
    reference.bindTo(binderRegistry);
    reference.handlerDuration(okDestination, group, Duration.ofMillis(1), false);
    reference.handlerDuration(failDestination, group, Duration.ofMillis(1), true);

    for (String[] c : List.of(new String[] {okDestination, "none"},
        new String[] {failDestination, "IllegalStateException"})) {
      Map<String, String> expected = tags(binderRegistry.find(HANDLER)
          .tag("messaging.destination.name", c[0]).timer());
      Map<String, String> observed = tags(handlerTimers(c[0]).iterator().next());
      assertThat(expected).as("the binder's tag keys").containsOnlyKeys("messaging.system",
          "messaging.destination.name", "messaging.consumer.group.name", "outcome");
      assertThat(observed).as("the observation's timer of %s", c[0])
          .containsAllEntriesOf(expected).containsEntry("error", c[1]).hasSize(5);
    }
  }

  private static Map<String, String> tags(Meter meter) {
    assertThat(meter).isNotNull();
    return meter.getId().getTags().stream()
        .collect(Collectors.toMap(Tag::getKey, Tag::getValue, (a, b) -> a, TreeMap::new));
  }
}

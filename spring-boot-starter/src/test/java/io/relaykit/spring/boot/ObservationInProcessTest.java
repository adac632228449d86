package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import io.relaykit.message.Message;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.tck.Await;
import io.relaykit.trace.TraceContext;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter's observations on the in-process transport and H2 storage, with a {@link
 * TestObservationRegistry} (which Boot's observation auto-configuration equips with its meter
 * handler) and a stand-in tracing bridge that injects and extracts a {@code traceparent}.
 */
class ObservationInProcessTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String SYSTEM = "relaykit-inprocess";
  private static final String DESTINATION = "messaging.destination.name";
  private static final String GROUP = "messaging.consumer.group.name";

  private static ConfigurableApplicationContext ctx;
  private static TestObservationRegistry observations;
  private static String destination;
  private static String failDestination;
  private static String group;

  @BeforeAll
  static void start() {
    destination = unique("orders");
    failDestination = unique("fails");
    group = unique("g");
    ctx = new SpringApplicationBuilder(MetricsApp.class, Observations.class)
        .web(WebApplicationType.NONE).properties(
            "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=h2",
            "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
            "relaykit.spring.relay.enabled=false",
            "relaykit.retry.max-attempts=2",
            "relaykit.retry.initial-backoff=10ms",
            "relaykit.retry.max-backoff=20ms",
            "test.destination=" + destination,
            "test.fail-destination=" + failDestination,
            "test.group=" + group).run();
    observations = ctx.getBean(TestObservationRegistry.class);
  }

  @AfterAll
  static void stop() {
    if (ctx != null) {
      ctx.close();
    }
  }

  /** A registry of the test's own: Boot's auto-configuration backs off and configures it. */
  @Configuration(proxyBeanMethods = false)
  static class Observations {
    @Bean
    TestObservationRegistry testObservationRegistry() {
      TestObservationRegistry registry = TestObservationRegistry.create();
      registry.observationConfig().observationHandler(new StandInTracing());
      return registry;
    }
  }

  /**
   * What a tracing bridge's propagating handlers do, without spans: a sender gets a new {@code
   * traceparent} injected into its carrier; a receiver has its carrier's {@code traceparent}
   * (its remote parent) read and kept in the context.
   */
  static final class StandInTracing implements ObservationHandler<Observation.Context> {
    static final String INJECTED = "test.injected";
    static final String PARENT = "test.parent";
    static final java.util.Queue<Observation.Context> STARTED =
        new java.util.concurrent.ConcurrentLinkedQueue<>();
    static final java.util.Set<Observation.Context> STOPPED =
        java.util.Collections.newSetFromMap(new java.util.concurrent.ConcurrentHashMap<>());

    @Override
    public void onStop(Observation.Context context) {
      STOPPED.add(context);
    }

    @Override
    @SuppressWarnings("unchecked")
    public void onStart(Observation.Context context) {
      if (context instanceof SenderContext<?> s) {
        String traceparent = String.format("00-%016x%016x-%016x-01",
            ThreadLocalRandom.current().nextLong(), ThreadLocalRandom.current().nextLong() | 1,
            ThreadLocalRandom.current().nextLong() | 1);
        ((SenderContext<Object>) s).getSetter().set(s.getCarrier(), "traceparent", traceparent);
        context.put(INJECTED, traceparent);
      } else if (context instanceof ReceiverContext<?> r) {
        String parent = ((ReceiverContext<Object>) r).getGetter().get(r.getCarrier(),
            "traceparent");
        context.put(PARENT, parent == null ? "" : parent);
      }
      STARTED.add(context);
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
      return context instanceof SenderContext || context instanceof ReceiverContext;
    }
  }

  private static Message append(String to) {
    String id = unique("m");
    TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
    return new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class)).execute(
        s -> outbox.append(to, null, new Payload(id)));
  }

  /** A typed payload (the starter's JSON codec). */
  record Payload(String ref) {
  }

  private static List<Observation.Context> contexts(String name, String messageId) {
    return StandInTracing.STARTED.stream()
        .filter(c -> name.equals(c.getName()))
        .filter(c -> messageId.equals(value(c, "messaging.message.id")))
        .toList();
  }

  private static Observation.Context only(String name, String messageId) {
    List<Observation.Context> found = contexts(name, messageId);
    assertThat(found).as("%s observations of %s", name, messageId).hasSize(1);
    return found.get(0);
  }

  private static String value(Observation.Context c, String key) {
    io.micrometer.common.KeyValue kv = c.getLowCardinalityKeyValue(key);
    if (kv == null) {
      kv = c.getHighCardinalityKeyValue(key);
    }
    return kv == null ? null : kv.getValue();
  }

  private static boolean stopped(String name, String messageId,
      Predicate<Observation.Context> also) {
    return StandInTracing.STARTED.stream()
        .filter(StandInTracing.STOPPED::contains)
        .anyMatch(c -> name.equals(c.getName())
            && messageId.equals(value(c, "messaging.message.id")) && also.test(c));
  }

  @Test
  @DisplayName("append, relay publish and handle are three observations with OpenTelemetry's"
      + " messaging names and key values; the trace context flows from the append to the handler")
  void appendPublishHandle() {
    Message m = append(destination);
    Observation.Context append = only(RelaykitObservations.APPEND, m.id());
    assertThat(append).isInstanceOf(SenderContext.class);
    assertThat(((SenderContext<?>) append).getKind()).isEqualTo(Kind.PRODUCER);
    assertThat(append.getContextualName()).isEqualTo("create " + destination);
    assertThat(value(append, "messaging.system")).isEqualTo(SYSTEM);
    assertThat(append.getLowCardinalityKeyValue(DESTINATION).getValue()).isEqualTo(destination);
    assertThat(append.getHighCardinalityKeyValue("messaging.operation.type").getValue())
        .isEqualTo("create");
    String injected = append.get(StandInTracing.INJECTED);
    assertThat(injected).as("the bridge's context at the append").isNotNull();
    assertThat(m.headers()).as("the appended message carries the append's context")
        .containsEntry(TraceContext.TRACEPARENT, injected);

    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
    Await.until(WAIT, "the publish and the handler call are observed",
        () -> stopped(RelaykitObservations.PUBLISH, m.id(), c -> true)
            && stopped(RelaykitObservations.HANDLE, m.id(), c -> true));

    Observation.Context publish = only(RelaykitObservations.PUBLISH, m.id());
    assertThat(publish.getContextualName()).isEqualTo("publish " + destination);
    assertThat(((ReceiverContext<?>) publish).getKind()).isEqualTo(Kind.PRODUCER);
    assertThat(publish.getLowCardinalityKeyValue("messaging.system").getValue())
        .isEqualTo(SYSTEM);
    assertThat(publish.getLowCardinalityKeyValue(DESTINATION).getValue()).isEqualTo(destination);
    assertThat(publish.getHighCardinalityKeyValue("messaging.operation.type").getValue())
        .isEqualTo("send");
    assertThat((String) publish.get(StandInTracing.PARENT))
        .as("the publish's parent: the append's context, read from the outbox row")
        .isEqualTo(injected);
    assertThat(publish.getError()).isNull();

    Observation.Context handle = only(RelaykitObservations.HANDLE, m.id());
    assertThat(handle.getContextualName()).isEqualTo("process " + destination);
    assertThat(((ReceiverContext<?>) handle).getKind()).isEqualTo(Kind.CONSUMER);
    assertThat(handle.getLowCardinalityKeyValue("messaging.system").getValue())
        .isEqualTo(SYSTEM);
    assertThat(handle.getLowCardinalityKeyValue(DESTINATION).getValue()).isEqualTo(destination);
    assertThat(handle.getLowCardinalityKeyValue(GROUP).getValue()).isEqualTo(group);
    assertThat(handle.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo("success");
    assertThat(handle.getHighCardinalityKeyValue("messaging.operation.type").getValue())
        .isEqualTo("process");
    assertThat(handle.getHighCardinalityKeyValue("relaykit.delivery.attempt").getValue())
        .isEqualTo("1");
    assertThat((String) handle.get(StandInTracing.PARENT))
        .as("the handler's parent: the context the delivery carries, the append's")
        .isEqualTo(injected);
    assertThat(handle.getError()).isNull();
    for (String name : List.of(RelaykitObservations.APPEND, RelaykitObservations.PUBLISH,
        RelaykitObservations.HANDLE)) {
      TestObservationRegistryAssert.assertThat(observations).hasObservationWithNameEqualTo(name)
          .that().hasBeenStarted().hasBeenStopped();
    }
  }

  @Test
  @DisplayName("a handler that throws marks its observation's error and outcome=failure")
  void handlerErrorMarksTheObservation() {
    Message m = append(failDestination);
    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
    Await.until(WAIT, "a failed handler call is observed",
        () -> stopped(RelaykitObservations.HANDLE, m.id(), c -> c.getError() != null));
    Observation.Context failed = contexts(RelaykitObservations.HANDLE, m.id()).stream()
        .filter(c -> c.getError() != null).findFirst().orElseThrow();
    assertThat(failed.getError()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(m.id());
    assertThat(failed.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo("failure");
    assertThat(failed.getLowCardinalityKeyValue(GROUP).getValue()).isEqualTo(group + "-fail");
  }

  @Test
  @DisplayName("the timers keep their names and tags, one meter per name and tags: the binder"
      + " does not record them too, and the hand-wired tracing is not used")
  void timersKeepTheirNamesOnce() {
    Message m = append(destination);
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    double before = count(registry, "relaykit.handler.duration", destination, "success");
    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
    Await.until(WAIT, "the handler call is observed",
        () -> stopped(RelaykitObservations.HANDLE, m.id(), c -> true));

    java.util.Collection<Meter> handler = registry.find("relaykit.handler.duration")
        .tags(DESTINATION, destination, GROUP, group, "outcome", "success").meters();
    assertThat(handler).as("one handler timer for the destination, group and outcome")
        .hasSize(1).allSatisfy(t -> {
          assertThat(t).isInstanceOf(Timer.class);
          assertThat(t.getId().getTag("messaging.system")).isEqualTo(SYSTEM);
        });
    assertThat(count(registry, "relaykit.handler.duration", destination, "success") - before)
        .as("one timing per handler call, not two").isEqualTo(1);
    java.util.Collection<Meter> confirm = registry.find("relaykit.publish.confirm.duration")
        .tags(DESTINATION, destination).meters();
    assertThat(confirm).as("one confirm timer for the destination").hasSize(1)
        .allSatisfy(t -> assertThat(t.getId().getTag("messaging.system")).isEqualTo(SYSTEM));

    RelayKitMeterBinder binder = ctx.getBean(RelayKitMeterBinder.class);
    binder.handlerDuration(destination, group, Duration.ofMillis(5), false);
    assertThat(count(registry, "relaykit.handler.duration", destination, "success") - before)
        .as("the binder records no handler timing of its own").isEqualTo(1);

    RelaykitObservations bean = ctx.getBean(RelaykitObservations.class);
    assertThat(((JdbcOutboxStore) ctx.getBean(TransactionalOutbox.class).store()).traceCapture()
        .propagation()).as("the outbox asks the observations, not a discovered tracer")
        .isSameAs(bean);
    assertThat(bean.current()).isEqualTo(Optional.empty());
  }

  private static double count(MeterRegistry registry, String name, String dest,
      String outcome) {
    return registry.find(name).tags(DESTINATION, dest, GROUP, group, "outcome", outcome)
        .timers().stream().mapToLong(Timer::count).sum();
  }
}

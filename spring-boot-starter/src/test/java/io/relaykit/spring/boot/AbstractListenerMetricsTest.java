package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.relaykit.message.Message;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The starter's Micrometer binder fed by the relay, the transport and each @RelaykitListener
 * subscription of a real application: one relayed message gives exact counts at every stage, once
 * each (the relay and its publisher both report PUBLISHED and CONFIRMED; the binder must see them
 * once), and a failing listener's retries and dead letter follow {@code relaykit.retry.*}. The test
 * runs the relay's cycle itself (the relay's lifecycle is off): when {@link OutboxRelay#runOnce}
 * returns, the relay has reported everything it will for the message.
 */
abstract class AbstractListenerMetricsTest {

  /** OpenTelemetry's messaging attribute names, the binder's tag keys. */
  static final String DESTINATION = "messaging.destination.name";
  static final String GROUP = "messaging.consumer.group.name";
  static final String PARTITION = "messaging.destination.partition.id";

  static final Duration WAIT = Duration.ofSeconds(30);
  static final int MAX_ATTEMPTS = 3;

  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  /** The transport's properties; may create {@code destinations} on a broker. */
  abstract List<String> transportProperties(String... destinations);

  /** The {@code messaging.system} the starter's binder tags this transport's meters with. */
  abstract String messagingSystem();

  ConfigurableApplicationContext start(String destination, String failDestination) {
    List<String> props = new ArrayList<>(List.of(
        "relaykit.spring.relay.enabled=false",
        "relaykit.retry.max-attempts=" + MAX_ATTEMPTS,
        "relaykit.retry.initial-backoff=10ms",
        "relaykit.retry.max-backoff=20ms",
        "test.destination=" + destination,
        "test.fail-destination=" + failDestination,
        "test.group=" + unique("g")));
    props.addAll(transportProperties(destination, failDestination));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(MetricsApp.class)
        .web(WebApplicationType.NONE).properties(props.toArray(String[]::new)).run();
    contexts.add(ctx);
    return ctx;
  }

  @AfterEach
  void close() throws Exception {
    for (ConfigurableApplicationContext ctx : contexts) {
      ctx.close();
      cleanUp(ctx.getEnvironment());
    }
  }

  /**
   * Removes what the closed context {@code env} left on a shared broker; by default nothing.
   *
   * @param env the closed context's environment ({@code test.destination}, {@code
   *     test.fail-destination}, {@code test.group})
   */
  void cleanUp(org.springframework.core.env.Environment env) throws Exception {
  }

  static double count(MeterRegistry registry, String destination, Stage stage) {
    Counter c = registry.find("relaykit.messages").tags(DESTINATION, destination,
        "stage", RelayKitMeterBinder.stage(stage)).counter();
    return c == null ? 0 : c.count();
  }

  static long handlerCount(MeterRegistry registry, String destination, String group,
      String outcome) {
    Timer t = registry.find("relaykit.handler.duration").tags(DESTINATION, destination,
        GROUP, group, "outcome", outcome).timer();
    return t == null ? 0 : t.count();
  }

  static void relay(ConfigurableApplicationContext ctx, String destination, String id) {
    ctx.getBean(InMemoryOutboxStore.class).append(destination,
        Message.builder().id(id).type("order.placed").payload("{}").build());
    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
  }

  @Test
  @DisplayName("one relayed message consumed by a listener: published, confirmed, delivered and"
      + " acked once each, one handler timing")
  void oneMessageCountsOnceAtEveryStage() throws Exception {
    String destination = unique("orders");
    ConfigurableApplicationContext ctx = start(destination, unique("fails"));
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    String group = ctx.getEnvironment().getRequiredProperty("test.group");
    relay(ctx, destination, unique("m"));

    Await.until(WAIT, "the listener's ack is counted",
        () -> count(registry, destination, Stage.ACKED) >= 1
            && handlerCount(registry, destination, group, "success") >= 1);
    afterAck(registry, destination, group);

    assertThat(count(registry, destination, Stage.PUBLISHED)).as("published").isEqualTo(1);
    assertThat(count(registry, destination, Stage.CONFIRMED)).as("confirmed").isEqualTo(1);
    assertThat(count(registry, destination, Stage.DELIVERED)).as("delivered").isEqualTo(1);
    assertThat(count(registry, destination, Stage.ACKED)).as("acked").isEqualTo(1);
    assertThat(count(registry, destination, Stage.RETRIED)).as("retried").isZero();
    assertThat(handlerCount(registry, destination, group, "success")).as("handler timings")
        .isEqualTo(1);
    assertThat(handlerCount(registry, destination, group, "failure")).isZero();
    assertThat(ctx.getBean(MetricsApp.Handlers.class).handled).hasSize(1);
    assertThat(registry.find("relaykit.messages").meters()).as("relaykit.messages series")
        .isNotEmpty().allSatisfy(m -> assertThat(m.getId().getTag("messaging.system"))
            .isEqualTo(messagingSystem()));
    assertThat(registry.find("relaykit.handler.duration").meters()).isNotEmpty()
        .allSatisfy(m -> assertThat(m.getId().getTag("messaging.system"))
            .isEqualTo(messagingSystem()));
  }

  /**
   * Checks what the transport reports once the ack is counted; by default nothing.
   *
   * @param registry the application's registry
   * @param destination the destination
   * @param group the listener's group
   */
  void afterAck(MeterRegistry registry, String destination, String group) throws Exception {
  }

  @Test
  @DisplayName("a listener that always fails: delivered max-attempts times, retried one fewer,"
      + " dead-lettered once, one failed handler timing per attempt")
  void failingListenerCountsRetriesAndTheDeadLetter() {
    String failDestination = unique("fails");
    ConfigurableApplicationContext ctx = start(unique("orders"), failDestination);
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    String group = ctx.getEnvironment().getRequiredProperty("test.group") + "-fail";
    relay(ctx, failDestination, unique("m"));

    Await.until(WAIT, "the dead letter is counted",
        () -> count(registry, failDestination, Stage.DEAD_LETTERED) >= 1
            && handlerCount(registry, failDestination, group, "failure") >= MAX_ATTEMPTS);

    assertThat(count(registry, failDestination, Stage.PUBLISHED)).as("published").isEqualTo(1);
    assertThat(count(registry, failDestination, Stage.CONFIRMED)).as("confirmed").isEqualTo(1);
    assertThat(count(registry, failDestination, Stage.DELIVERED)).as("delivered")
        .isEqualTo(MAX_ATTEMPTS);
    assertThat(count(registry, failDestination, Stage.RETRIED)).as("retried")
        .isEqualTo(MAX_ATTEMPTS - 1);
    assertThat(count(registry, failDestination, Stage.DEAD_LETTERED)).as("dead_lettered")
        .isEqualTo(1);
    assertThat(count(registry, failDestination, Stage.ACKED)).as("acked").isZero();
    assertThat(handlerCount(registry, failDestination, group, "failure")).as("failed timings")
        .isEqualTo(MAX_ATTEMPTS);
    assertThat(ctx.getBean(MetricsApp.Handlers.class).failed).hasSize(MAX_ATTEMPTS);
  }
}

package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.relaykit.message.Message;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The Micrometer binder on the application's MeterRegistry, fed by the starter's relay. */
class RelaykitMicrometerTest {

  /** OpenTelemetry's messaging attribute name, the binder's tag key. */
  static final String DESTINATION = "messaging.destination.name";

  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  ConfigurableApplicationContext start(Class<?>... sources) {
    List<Class<?>> all = new ArrayList<>(List.of(ActuatorApp.class));
    all.addAll(List.of(sources));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(all.toArray(Class[]::new))
        .web(WebApplicationType.NONE)
        .properties("spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            // The test runs the relay's cycle itself: one cycle, one message.
            "relaykit.spring.relay.enabled=false")
        .run();
    contexts.add(ctx);
    return ctx;
  }

  @AfterEach
  void close() {
    contexts.forEach(ConfigurableApplicationContext::close);
  }

  private static Message message(String id) {
    return Message.builder().id(id).type("order.placed").payload("{}").build();
  }

  @Test
  @DisplayName("a relayed message is counted in the application's registry: published,"
      + " confirmed, the confirm timer and the outbox gauges")
  void relayedMessageShowsUpInTheRegistry() {
    ConfigurableApplicationContext ctx = start();
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    String destination = unique("orders");
    ctx.getBean(InMemoryOutboxStore.class).append(destination, message(unique("m")));

    OutboxRelay.Batch batch = ctx.getBean(OutboxRelay.class).runOnce();
    assertThat(batch.sent()).isEqualTo(1);

    for (LifecycleEvent.Stage stage : List.of(LifecycleEvent.Stage.PUBLISHED,
        LifecycleEvent.Stage.CONFIRMED)) {
      Counter c = registry.find("relaykit.messages").tags(DESTINATION, destination,
          "stage", RelayKitMeterBinder.stage(stage)).counter();
      assertThat(c).as("relaykit.messages{stage=%s}", stage).isNotNull();
      assertThat(c.count()).as("relaykit.messages{stage=%s}", stage).isEqualTo(1.0);
    }
    Timer confirm = registry.find("relaykit.publish.confirm.duration")
        .tags(DESTINATION, destination).timer();
    assertThat(confirm).isNotNull();
    assertThat(confirm.count()).isEqualTo(1);
    Gauge backlog = registry.find("relaykit.outbox.backlog").tags(DESTINATION, "outbox").gauge();
    assertThat(backlog).as("the relay's backlog sample").isNotNull();
    assertThat(backlog.getId().getTag("messaging.system")).as("the default transport's system")
        .isEqualTo("relaykit-inprocess");
    assertThat(ctx.getBean(RelayKitMeterBinder.class).messagingSystem())
        .isEqualTo(ctx.getBean(io.relaykit.message.Publisher.class).messagingSystem());
  }

  @Test
  @DisplayName("the application's own binder is the one attached")
  void ownBinder() {
    ConfigurableApplicationContext ctx = start(OwnBinder.class);
    assertThat(ctx.getBeansOfType(RelayKitMeterBinder.class)).hasSize(1);
    String destination = unique("orders");
    ctx.getBean(InMemoryOutboxStore.class).append(destination, message(unique("m")));
    ctx.getBean(OutboxRelay.class).runOnce();
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    assertThat(registry.find("shop.messages").tags(DESTINATION, destination).counters())
        .isNotEmpty();
    assertThat(registry.find("relaykit.messages").tags(DESTINATION, destination).counters())
        .isEmpty();
  }

  @Test
  @DisplayName("without relaykit-micrometer on the class path there is no binder and the relay"
      + " still starts")
  void withoutTheBinderModule() {
    new ApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader("io.relaykit.metrics.micrometer"))
        .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
            RelaykitMicrometerAutoConfiguration.class))
        .withPropertyValues("relaykit.spring.relay.enabled=false")
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(OutboxRelay.class)
            .doesNotHaveBean(RelaykitRelayCustomizer.class));
  }

  @Test
  @DisplayName("without a MeterRegistry bean there is no binder")
  void withoutARegistry() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
            RelaykitMicrometerAutoConfiguration.class))
        .withPropertyValues("relaykit.spring.relay.enabled=false")
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(OutboxRelay.class)
            .doesNotHaveBean(RelayKitMeterBinder.class));
  }

  /** A binder with its own prefix. */
  @Configuration(proxyBeanMethods = false)
  static class OwnBinder {
    @Bean
    RelayKitMeterBinder shopMeters() {
      return RelayKitMeterBinder.builder().prefix("shop").build();
    }
  }
}

package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;

/**
 * The application's own MetricsListener and LifecycleListener beans reach the starter's transport
 * and relay (without Micrometer), each step once.
 */
class RelaykitMonitoringTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class))
      .withPropertyValues("relaykit.spring.relay.enabled=false");

  private static List<Stage> stagesOf(Recorder r, String id) {
    return r.events.stream().filter(e -> e.messageId().equals(id)).map(LifecycleEvent::stage)
        .toList();
  }

  private static String relayOne(org.springframework.context.ApplicationContext ctx,
      String destination) {
    String id = unique("m");
    ctx.getBean(InMemoryOutboxStore.class).append(destination,
        Message.builder().id(id).type("t").payload("{}").build());
    assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
    return id;
  }

  @Test
  @DisplayName("every listener bean sees published and confirmed once, from the in-process"
      + " transport; the metrics bean gets the relay's confirm time")
  void listenerBeansOnTheStartersTransport() {
    runner.withUserConfiguration(Listeners.class).run(ctx -> {
      String id = relayOne(ctx, unique("orders"));
      Listeners l = ctx.getBean(Listeners.class);
      assertThat(stagesOf(l.first, id)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED);
      assertThat(stagesOf(l.second, id)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED);
      assertThat(l.order).startsWith("first", "second");
      assertThat(l.confirms).hasSize(1);
      assertThat(ctx.getBean(RelaykitMonitoring.class).reports(ctx.getBean(Publisher.class)))
          .isTrue();
    });
  }

  @Test
  @DisplayName("with the application's own Publisher, which reports nothing, the relay reports"
      + " published and confirmed itself")
  void ownPublisherGetsTheRelaysSteps() {
    runner.withUserConfiguration(Listeners.class, OwnPublisher.class).run(ctx -> {
      String id = relayOne(ctx, unique("orders"));
      Listeners l = ctx.getBean(Listeners.class);
      assertThat(stagesOf(l.first, id)).containsExactly(Stage.PUBLISHED, Stage.CONFIRMED);
      assertThat(ctx.getBean(RelaykitMonitoring.class).reports(ctx.getBean(Publisher.class)))
          .isFalse();
    });
  }

  @Test
  @DisplayName("without listener beans nothing is composed and the relay keeps its defaults")
  void noListenerBeans() {
    runner.run(ctx -> {
      RelaykitMonitoring m = ctx.getBean(RelaykitMonitoring.class);
      assertThat(m.hasMetrics()).isFalse();
      assertThat(m.hasLifecycle()).isFalse();
      assertThat(relayOne(ctx, unique("orders"))).isNotBlank();
    });
  }

  /** Records lifecycle events. */
  static final class Recorder implements LifecycleListener {
    final List<LifecycleEvent> events = new CopyOnWriteArrayList<>();
    private final String name;
    private final List<String> order;

    Recorder(String name, List<String> order) {
      this.name = name;
      this.order = order;
    }

    @Override
    public void on(LifecycleEvent event) {
      order.add(name);
      events.add(event);
    }
  }

  /** Two ordered lifecycle listeners and a metrics listener. */
  @Configuration(proxyBeanMethods = false)
  static class Listeners {
    final List<String> order = new CopyOnWriteArrayList<>();
    final Recorder first = new Recorder("first", order);
    final Recorder second = new Recorder("second", order);
    final List<Duration> confirms = new CopyOnWriteArrayList<>();

    @Bean
    @Order(2)
    LifecycleListener secondListener() {
      return second;
    }

    @Bean
    @Order(1)
    LifecycleListener firstListener() {
      return first;
    }

    @Bean
    MetricsListener confirmTimes() {
      return new MetricsListener() {
        @Override
        public void publishConfirmDuration(String destination, Duration duration) {
          confirms.add(duration);
        }
      };
    }
  }

  /** A publisher that confirms at once and reports to no listener. */
  @Configuration(proxyBeanMethods = false)
  static class OwnPublisher {
    @Bean
    Publisher ownPublisher() {
      return new Publisher() {
        @Override
        public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
          return CompletableFuture.completedFuture(
              new PublishReceipt(message.id(), destination, "0"));
        }

        @Override
        public void close() {
        }
      };
    }
  }
}

package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleEvent.Stage;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** The binder's numbers on the in-process transport and in-memory storage. */
class InProcessListenerMetricsTest extends AbstractListenerMetricsTest {

  @Override
  String messagingSystem() {
    return "relaykit-inprocess";
  }

  @Override
  List<String> transportProperties(String... destinations) {
    return List.of();
  }

  @Test
  @DisplayName("on H2 storage the outbox's ENQUEUED and a replay's REPLAYED reach the meters")
  void h2EnqueuedAndReplayedAreCounted() throws Exception {
    String destination = unique("orders");
    try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(MetricsApp.class)
        .web(WebApplicationType.NONE).properties(
            "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=h2",
            "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
            "relaykit.spring.relay.enabled=false",
            "test.destination=" + destination,
            "test.fail-destination=" + unique("fails"),
            "test.group=" + unique("g")).run()) {
      MeterRegistry registry = ctx.getBean(MeterRegistry.class);
      TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
      new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class)).executeWithoutResult(
          s -> outbox.append(destination, Message.builder().id(unique("m"))
              .type("order.placed").payload("{}").build()));
      assertThat(count(registry, destination, Stage.ENQUEUED)).as("enqueued").isEqualTo(1);

      DeadLetterStore deadLetters = ctx.getBean(DeadLetterStore.class);
      Instant now = Instant.now();
      Message m = Message.builder().id(unique("dl")).type("order.placed").payload("{}").build();
      DeadLetter d = new DeadLetter(m, destination, null, "attempts exhausted (3 of 3)",
          "java.io.IOException", "refused", 3, now.minusSeconds(30), now);
      deadLetters.add(d);
      RelaykitDeadLettersEndpoint.Replay replay = DeadLetterReplays.choose(deadLetters,
          outbox.store(), null, null, Duration.ofSeconds(5),
          ctx.getBean(RelaykitMonitoring.class).lifecycle());
      assertThat(replay.replay(d.id())).isPresent();
      assertThat(count(registry, destination, Stage.REPLAYED)).as("replayed").isEqualTo(1);
    }
  }
}

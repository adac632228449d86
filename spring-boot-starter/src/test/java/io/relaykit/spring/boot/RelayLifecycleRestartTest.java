package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The relay's lifecycle is single use (a stopped context cannot start its relay again), and its
 * stop keeps to the shutdown phase when the broker does not confirm.
 */
class RelayLifecycleRestartTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class));

  @Test
  @DisplayName("the relay starts with the context and stops (closes) with ctx.stop()")
  void theRelayRunsWithTheContext() {
    runner.run(ctx -> {
      RelaykitRelayLifecycle lifecycle = ctx.getBean(RelaykitRelayLifecycle.class);
      assertThat(lifecycle.isRunning()).isTrue();
      assertThat(lifecycle.relay()).isSameAs(ctx.getBean(OutboxRelay.class));

      ctx.stop();

      assertThat(lifecycle.isRunning()).isFalse();
      assertThatThrownBy(() -> lifecycle.relay().start())
          .as("the relay itself is closed").isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("is closed");
    });
  }

  @Test
  @DisplayName("starting a stopped context fails saying the relay cannot be restarted")
  void aStoppedRelayIsNotRestarted() {
    runner.run(ctx -> {
      RelaykitRelayLifecycle lifecycle = ctx.getBean(RelaykitRelayLifecycle.class);
      ctx.stop();

      assertThatThrownBy(ctx::start).rootCause().isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("cannot be restarted")
          .hasMessageContaining("start a new one");
      assertThat(lifecycle.isRunning()).isFalse();
    });
  }

  @Test
  @DisplayName("a relay waiting for a confirm that never comes stops at nine tenths of the phase,"
      + " its row left unsent")
  void aStuckRelayStopsWithinThePhase() throws Exception {
    Duration phase = Duration.ofSeconds(2);
    CountDownLatch published = new CountDownLatch(1);
    CompletableFuture<PublishReceipt> never = new CompletableFuture<>();
    Publisher silent = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        published.countDown();
        return never;
      }

      @Override
      public void close() {
      }
    };
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    OutboxRelay relay = OutboxRelay.builder(store, silent, new InMemoryDeadLetterStore())
        .confirmTimeout(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).build();
    RelaykitRelayLifecycle lifecycle = new RelaykitRelayLifecycle(relay, phase);
    try {
      store.append("orders", Message.builder().type("order.placed").payload("x").build());
      lifecycle.start();
      assertThat(published.await(30, TimeUnit.SECONDS)).as("the relay publishes").isTrue();

      long t0 = System.nanoTime();
      lifecycle.stop();
      Duration took = Duration.ofNanos(System.nanoTime() - t0);

      assertThat(took).as("the stop waited up to its deadline")
          .isGreaterThanOrEqualTo(RelaykitListenerRegistry.stopDeadline(phase));
      assertThat(took).as("and returned within the phase on a loaded machine")
          .isLessThan(phase.multipliedBy(2));
      assertThat(lifecycle.isRunning()).isFalse();
      assertThat(store.stats(Instant.now()).unsent()).as("the unconfirmed row").isEqualTo(1);
    } finally {
      never.completeExceptionally(new IllegalStateException("test over"));
    }
  }
}

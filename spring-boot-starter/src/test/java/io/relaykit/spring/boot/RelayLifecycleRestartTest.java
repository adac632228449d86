package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.outbox.OutboxRelay;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The relay's lifecycle is single use: a stopped context cannot start its relay again. */
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
}

package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;

import io.relaykit.message.Subscription;
import io.relaykit.monitor.LifecycleEvent;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;

/** The listener lifecycle on the default transport (in-process) and H2. */
class InProcessListenerLifecycleTest extends AbstractListenerLifecycleTest {
  @Override
  List<String> transportProperties() {
    return List.of();
  }

  /**
   * The in-process transport holds messages in memory and closes with the context: the stuck
   * message went back to its group (never acknowledged there) and is gone with the transport, so
   * what is checked is the transport's own account of it. The idempotent group acknowledged it.
   */
  @Override
  void afterStuckClose(Environment env, String id, ListenerApp.Events events) {
    String group = env.getRequiredProperty("test.group");
    List<LifecycleEvent> ofId = events.all.stream().filter(e -> e.messageId().equals(id))
        .toList();
    assertThat(ofId).as("events of %s", id)
        .anyMatch(e -> e.stage() == LifecycleEvent.Stage.DELIVERED)
        .anyMatch(e -> e.stage() == LifecycleEvent.Stage.ACKED
            && e.detail().equals("group=" + group + "-once"))
        .noneMatch(e -> e.stage() == LifecycleEvent.Stage.ACKED
            && e.detail().equals("group=" + group))
        // Its late failure (the interrupted handler) is ignored: no retry, no dead letter.
        .noneMatch(e -> e.stage() == LifecycleEvent.Stage.RETRIED
            || e.stage() == LifecycleEvent.Stage.DEAD_LETTERED);
  }

  /** Registry behaviour, the same on every transport: checked here only. */
  @Test
  void aListenerBeanDestroyedWhileTheRegistryRunsHasItsSubscriptionClosed() {
    ConfigurableApplicationContext ctx = start(unique("g"));
    RelaykitListenerRegistry registry = ctx.getBean(RelaykitListenerRegistry.class);
    ctx.getBean(ListenerApp.LateInbox.class);
    List<Subscription> subscriptions = registry.subscriptions();
    assertThat(subscriptions).hasSize(3);
    Subscription late = subscriptions.get(2);
    assertThat(late.isRunning()).isTrue();

    ((DefaultListableBeanFactory) ctx.getBeanFactory())
        .destroySingleton(ListenerApp.LateInbox.class.getName());

    assertThat(late.isRunning()).isFalse();
    assertThat(registry.subscriptions()).hasSize(2).doesNotContain(late)
        .allMatch(Subscription::isRunning);
    assertThat(registry.specs()).hasSize(2);
    assertThat(registry.isRunning()).isTrue();
  }
}

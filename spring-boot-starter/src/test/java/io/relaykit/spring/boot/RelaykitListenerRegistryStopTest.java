package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

/**
 * The registry's stop keeps one deadline for all its subscriptions, even when their transport's
 * close runs past the deadline it was given (a Kafka consumer's final commit and group leave, a
 * broker that does not answer): Spring gets its callback before its own phase timeout.
 */
class RelaykitListenerRegistryStopTest {

  private static final Duration PHASE = Duration.ofSeconds(2);

  /** Three listener methods: three subscriptions. */
  static class ThreeListeners {
    @RelaykitListener(destination = "a", group = "g")
    void a(Message m) {
    }

    @RelaykitListener(destination = "b", group = "g")
    void b(Message m) {
    }

    @RelaykitListener(destination = "c", group = "g")
    void c(Message m) {
    }
  }

  /** Subscriptions whose close ignores its deadline until {@link #release}. */
  static final class StuckSubscriber implements Subscriber {
    final CountDownLatch release = new CountDownLatch(1);
    final List<Duration> deadlines = new CopyOnWriteArrayList<>();

    @Override
    public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
      return new Subscription() {
        volatile boolean running = true;

        @Override
        public boolean close(Duration deadline) {
          running = false;
          deadlines.add(deadline);
          try {
            release.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return false;
        }

        @Override
        public boolean isRunning() {
          return running;
        }
      };
    }

    @Override
    public void close() {
    }
  }

  private static RelaykitListenerRegistry registry(Subscriber subscriber) {
    DefaultListableBeanFactory bf = new DefaultListableBeanFactory();
    bf.registerSingleton("subscriber", subscriber);
    bf.registerSingleton("settings", Settings.empty());
    RelaykitListenerRegistry r = new RelaykitListenerRegistry(bf.getBeanProvider(Subscriber.class),
        bf.getBeanProvider(IdempotencyStore.class), bf.getBeanProvider(Settings.class), PHASE);
    r.postProcessAfterInitialization(new ThreeListeners(), "three");
    return r;
  }

  @Test
  @DisplayName("stuck closes share one deadline: the callback comes before the phase timeout,"
      + " naming every stuck subscription")
  void stuckClosesShareOneDeadline() throws Exception {
    StuckSubscriber subscriber = new StuckSubscriber();
    RelaykitListenerRegistry registry = registry(subscriber);
    try {
      registry.start();
      assertThat(registry.subscriptions()).hasSize(3);
      CountDownLatch called = new CountDownLatch(1);
      long t0 = System.nanoTime();
      registry.stop(called::countDown);

      // Before the fix each close was joined for deadline + 1 s in turn: 3 x 2.6 s here.
      assertThat(called.await(PHASE.toMillis() * 2, TimeUnit.MILLISECONDS))
          .as("the stop's callback within twice the phase timeout").isTrue();
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      // It waited for the closes up to the stop deadline (nine tenths of the phase), not less.
      assertThat(took).isGreaterThanOrEqualTo(RelaykitListenerRegistry.stopDeadline(PHASE));
      assertThat(registry.isRunning()).isFalse();
      assertThat(registry.unfinishedAtLastStop()).containsExactlyInAnyOrder(
          "a/g (three.a)", "b/g (three.b)", "c/g (three.c)");
      // Each close was given what was left of the one drain deadline, never more.
      assertThat(subscriber.deadlines).hasSize(3)
          .allSatisfy(d -> assertThat(d).isLessThanOrEqualTo(
              RelaykitListenerRegistry.drainDeadline(PHASE)));
    } finally {
      subscriber.release.countDown();
    }
  }

  @Test
  @DisplayName("the deadlines leave Spring a tenth of the phase and the close a fifth")
  void deadlinesArePinned() {
    assertThat(RelaykitListenerRegistry.drainDeadline(Duration.ofSeconds(30)))
        .isEqualTo(Duration.ofSeconds(21));
    assertThat(RelaykitListenerRegistry.stopDeadline(Duration.ofSeconds(30)))
        .isEqualTo(Duration.ofSeconds(27));
  }
}

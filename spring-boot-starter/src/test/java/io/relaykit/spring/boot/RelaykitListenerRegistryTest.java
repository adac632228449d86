package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
 * The registry on a fake transport: its stop keeps one deadline for all its subscriptions, even
 * when their transport's close runs past the deadline it was given (a Kafka consumer's final commit
 * and group leave, a broker that does not answer), so Spring gets its callback before its own
 * phase timeout; listener beans created after the start are subscribed, or fail naming the bean.
 */
class RelaykitListenerRegistryTest {

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

  /** One listener method, for a bean of which several instances are made (a prototype). */
  static class OneListener {
    @RelaykitListener(destination = "p", group = "g")
    void p(Message m) {
    }
  }

  /**
   * Subscriptions whose close ignores its deadline until {@link #release}; {@link #refuse} makes
   * subscribe throw.
   */
  static final class StuckSubscriber implements Subscriber {
    final CountDownLatch release = new CountDownLatch(1);
    final List<Duration> deadlines = new CopyOnWriteArrayList<>();
    final List<String> subscribed = new CopyOnWriteArrayList<>();
    volatile boolean refuse;
    volatile boolean failClose;

    @Override
    public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
      if (refuse) {
        throw new IllegalStateException("broker unreachable");
      }
      subscribed.add(spec.destination());
      return new Subscription() {
        volatile boolean running = true;

        @Override
        public boolean close(Duration deadline) {
          running = false;
          deadlines.add(deadline);
          if (failClose) {
            throw new IllegalStateException("close failed");
          }
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

  @Test
  @DisplayName("instances created after the start (a prototype's) are subscribed at once, each")
  void lateInstancesAreSubscribed() {
    StuckSubscriber subscriber = new StuckSubscriber();
    subscriber.release.countDown();
    RelaykitListenerRegistry registry = registry(subscriber);
    registry.start();
    registry.postProcessAfterInitialization(new OneListener(), "proto");
    registry.postProcessAfterInitialization(new OneListener(), "proto");

    assertThat(subscriber.subscribed).hasSize(5);
    assertThat(subscriber.subscribed.subList(0, 3)).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(subscriber.subscribed.subList(3, 5)).containsExactly("p", "p");
    assertThat(registry.subscriptions()).hasSize(5).allMatch(Subscription::isRunning);
    registry.stop();
    assertThat(registry.subscriptions()).isEmpty();
  }

  @Test
  @DisplayName("a late bean whose subscription cannot open fails naming the bean")
  void aLateBeanThatCannotSubscribeFailsNamingIt() {
    StuckSubscriber subscriber = new StuckSubscriber();
    subscriber.release.countDown();
    RelaykitListenerRegistry registry = registry(subscriber);
    registry.start();
    subscriber.refuse = true;

    assertThatThrownBy(() -> registry.postProcessAfterInitialization(new OneListener(), "late"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("'late'")
        .hasMessageContaining("after the listeners started")
        .hasMessageContaining("broker unreachable");
    assertThat(registry.subscriptions()).hasSize(3);
    assertThat(registry.specs()).hasSize(3);
    registry.stop();
  }

  @Test
  @DisplayName("a close that throws does not stop the others closing, and is reported by name")
  void aFailingCloseIsReported() {
    StuckSubscriber subscriber = new StuckSubscriber();
    subscriber.release.countDown();
    subscriber.failClose = true;
    RelaykitListenerRegistry registry = registry(subscriber);
    registry.start();

    registry.stop();

    assertThat(subscriber.deadlines).hasSize(3);
    assertThat(registry.isRunning()).isFalse();
    assertThat(registry.unfinishedAtLastStop()).containsExactlyInAnyOrder(
        "a/g (three.a)", "b/g (three.b)", "c/g (three.c)");
  }
}

package io.relaykit.spring.boot;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Lazy;

/**
 * An application with the business service, two @RelaykitListener methods, a lazy bean with a
 * third and a recorder of the transport's lifecycle events.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({TestApp.OrderService.class, ListenerApp.Inbox.class, ListenerApp.LateInbox.class,
    ListenerApp.Events.class})
public class ListenerApp {

  /**
   * Records what its listeners receive; a "slow-" message blocks until {@link #release}, a
   * "stuck-" one until {@link #stuckRelease} (or its thread is interrupted).
   */
  public static class Inbox {
    final List<String> received = new CopyOnWriteArrayList<>();
    final List<String> events = new CopyOnWriteArrayList<>();
    final List<String> once = new CopyOnWriteArrayList<>();
    final CountDownLatch slowEntered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final CountDownLatch stuckEntered = new CountDownLatch(1);
    final CountDownLatch stuckRelease = new CountDownLatch(1);

    @RelaykitListener(destination = "${test.destination:orders}", group = "${test.group}")
    void onOrder(Message m) throws InterruptedException {
      if (m.id().startsWith("stuck-")) {
        stuckEntered.countDown();
        if (!stuckRelease.await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        events.add("handled " + m.id());
      }
      if (m.id().startsWith("slow-")) {
        slowEntered.countDown();
        if (!release.await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        events.add("handled " + m.id());
      }
      received.add(m.id());
    }

    /** Idempotent by the id's part before its first dot (the whole id when it has none). */
    @RelaykitListener(destination = "${test.destination:orders}", group = "${test.group}-once",
        idempotent = true,
        idempotencyKey = "'once:' + (id.indexOf('.') < 0 ? id : id.substring(0, id.indexOf('.')))")
    void onOrderOnce(Delivery d) {
      once.add(d.message().id());
    }
  }

  /** A @Lazy bean: created, and its listener subscribed, only when first requested. */
  @Lazy
  public static class LateInbox {
    final List<String> received = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "${test.destination:orders}", group = "${test.group}-late")
    void onOrder(Message m) {
      received.add(m.id());
    }
  }

  /** Every lifecycle event the transport and the relay report, in order. */
  public static class Events implements LifecycleListener {
    final List<LifecycleEvent> all = new CopyOnWriteArrayList<>();

    @Override
    public void on(LifecycleEvent event) {
      all.add(event);
    }
  }
}

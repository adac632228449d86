package io.relaykit.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleEvent.Stage;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class LifecycleLogTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private static LifecycleEvent event(Stage stage, String id, String trace) {
    return new LifecycleEvent(stage, id, trace, "orders", T0, "");
  }

  @Nested
  @DisplayName("LifecycleLog")
  class Log {

    @Test
    @DisplayName("answers a message's history and a trace, oldest first")
    void historyAndTrace() {
      LifecycleLog log = new LifecycleLog(100);
      log.on(event(Stage.ENQUEUED, "m1", "t1"));
      log.on(event(Stage.ENQUEUED, "m2", "t2"));
      log.on(event(Stage.PUBLISHED, "m1", "t1"));
      log.on(event(Stage.CONFIRMED, "m1", "t1"));
      log.on(event(Stage.ENQUEUED, "r1", null));
      log.on(event(Stage.DEAD_LETTERED, "m2", "t2"));

      assertThat(log.history("m1")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.PUBLISHED, Stage.CONFIRMED);
      assertThat(log.trace("t2")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.DEAD_LETTERED);
      assertThat(log.history("unknown")).isEmpty();
      assertThat(log.trace("unknown")).isEmpty();
      assertThat(log.all()).hasSize(6);
    }

    @Test
    @DisplayName("keeps only the most recent capacity events")
    void bounded() {
      LifecycleLog log = new LifecycleLog(3);
      for (int i = 0; i < 10; i++) {
        log.on(event(Stage.ACKED, "m" + i, "t"));
      }
      assertThat(log.all()).extracting(LifecycleEvent::messageId).containsExactly("m7", "m8", "m9");
      assertThat(log.history("m6")).isEmpty();
    }

    @Test
    @DisplayName("query results are copies, unaffected by later events")
    void copies() {
      LifecycleLog log = new LifecycleLog(10);
      log.on(event(Stage.ENQUEUED, "m1", "t1"));
      List<LifecycleEvent> all = log.all();
      log.on(event(Stage.ACKED, "m1", "t1"));
      assertThat(all).hasSize(1);
    }

    @Test
    @DisplayName("concurrent writers lose nothing below capacity")
    void concurrentWriters() throws InterruptedException {
      LifecycleLog log = new LifecycleLog(10_000);
      int threads = 4;
      int each = 1_000;
      CountDownLatch start = new CountDownLatch(1);
      CountDownLatch done = new CountDownLatch(threads);
      for (int t = 0; t < threads; t++) {
        String prefix = "w" + t + "-";
        new Thread(() -> {
          try {
            start.await();
            for (int i = 0; i < each; i++) {
              log.on(event(Stage.DELIVERED, prefix + i, "t"));
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            done.countDown();
          }
        }).start();
      }
      start.countDown();
      assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(log.all()).hasSize(threads * each);
      assertThat(log.history("w2-999")).hasSize(1);
    }

    @Test
    @DisplayName("capacity must be at least 1")
    void capacity() {
      assertThatThrownBy(() -> new LifecycleLog(0))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("capacity must be >= 1, was 0");
    }
  }

  @Nested
  @DisplayName("LifecycleEvent")
  class Event {

    @Test
    @DisplayName("stage, message id, where and time are required; a null detail becomes empty")
    void validation() {
      assertThatThrownBy(() -> new LifecycleEvent(null, "m", "t", "w", T0, ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("stage must not be null");
      assertThatThrownBy(() -> new LifecycleEvent(Stage.ACKED, " ", "t", "w", T0, ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("messageId must not be blank");
      assertThatThrownBy(() -> new LifecycleEvent(Stage.ACKED, "m", "t", "", T0, ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("where must not be blank");
      assertThatThrownBy(() -> new LifecycleEvent(Stage.ACKED, "m", "t", "w", null, ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("at must not be null");
      assertThat(new LifecycleEvent(Stage.ACKED, "m", null, "w", T0, null).detail()).isEmpty();
    }
  }

  @Nested
  @DisplayName("LifecycleListener")
  class Listener {

    @Test
    @DisplayName("safely contains a throwing listener: runtime exceptions, linkage and assertion errors")
    void safely() {
      LifecycleEvent e = event(Stage.ACKED, "m", "t");
      assertThatCode(() -> LifecycleListener.safely(x -> {
        throw new IllegalStateException("broken");
      }, e)).doesNotThrowAnyException();
      assertThatCode(() -> LifecycleListener.safely(x -> {
        throw new NoClassDefFoundError("io/opentelemetry/api/Span");
      }, e)).doesNotThrowAnyException();
      assertThatCode(() -> LifecycleListener.safely(x -> {
        throw new AssertionError("bug");
      }, e)).doesNotThrowAnyException();
      List<LifecycleEvent> seen = new ArrayList<>();
      LifecycleListener.safely(seen::add, e);
      assertThat(seen).containsExactly(e);
    }

    @Test
    @DisplayName("composite delivers to every listener in order, past a throwing one")
    void composite() {
      List<String> seen = new ArrayList<>();
      LifecycleListener all = LifecycleListener.composite(List.of(
          ev -> seen.add("a:" + ev.messageId()),
          ev -> {
            throw new IllegalStateException("broken");
          },
          ev -> seen.add("b:" + ev.messageId())));
      all.on(event(Stage.ENQUEUED, "m1", "t"));
      assertThat(seen).containsExactly("a:m1", "b:m1");
    }

    @Test
    @DisplayName("noop ignores events")
    void noop() {
      assertThatCode(() -> LifecycleListener.noop().on(event(Stage.ACKED, "m", "t")))
          .doesNotThrowAnyException();
    }
  }
}

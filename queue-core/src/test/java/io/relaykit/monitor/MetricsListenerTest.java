package io.relaykit.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class MetricsListenerTest {

  /** Records every call as text. */
  static final class Recording implements MetricsListener {
    final List<String> calls = new ArrayList<>();

    @Override
    public void backlogDepth(String destination, long depth) {
      calls.add("depth " + destination + " " + depth);
    }

    @Override
    public void oldestAge(String destination, Duration age) {
      calls.add("age " + destination + " " + age);
    }

    @Override
    public void consumerLag(String destination, String group, long lag) {
      calls.add("lag " + destination + " " + group + " " + lag);
    }

    @Override
    public void deadLetterDepth(String destination, long depth) {
      calls.add("dlq " + destination + " " + depth);
    }

    @Override
    public void dropped(String destination, String reason, long count) {
      calls.add("dropped " + destination + " " + reason + " " + count);
    }

    @Override
    public void backlog(String destination, BacklogSnapshot snapshot) {
      calls.add("backlog " + destination + " " + snapshot.verdict());
    }

    @Override
    public void consumerFailed(String destination, String group, Throwable cause) {
      calls.add("failed " + destination + " " + group + " " + cause.getMessage());
    }

    @Override
    public void deadLettered(String destination, String group) {
      calls.add("dead-lettered " + destination + " " + group);
    }

    @Override
    public void shareAcknowledged(String destination, String group, String type, long count) {
      calls.add("share-ack " + destination + " " + group + " " + type + " " + count);
    }

    @Override
    public void shareRenewed(String destination, String group, long count) {
      calls.add("share-renewed " + destination + " " + group + " " + count);
    }

    @Override
    public void shareLockLost(String destination, String group, long count) {
      calls.add("share-lock-lost " + destination + " " + group + " " + count);
    }
  }

  /** Throws from every method. */
  static final class Broken implements MetricsListener {
    @Override
    public void backlogDepth(String destination, long depth) {
      throw new IllegalStateException("exporter down");
    }

    @Override
    public void dropped(String destination, String reason, long count) {
      throw new NoClassDefFoundError("io/micrometer/Counter");
    }
  }

  private static void callEverything(MetricsListener l) {
    l.backlogDepth("orders", 5);
    l.oldestAge("orders", Duration.ofSeconds(3));
    l.consumerLag("orders", "billing", 7);
    l.deadLetterDepth("orders", 2);
    l.dropped("orders", "expired", 1);
    l.backlog("orders", new BacklogSnapshot(BacklogVerdict.STALLED, null, 0, Duration.ZERO, 0,
        Duration.ZERO, 0));
    l.consumerFailed("orders", "billing", new IllegalStateException("no offset"));
    l.deadLettered("orders", "billing");
    l.shareAcknowledged("orders", "billing", "accept", 3);
    l.shareRenewed("orders", "billing", 2);
    l.shareLockLost("orders", "billing", 1);
  }

  @Test
  @DisplayName("every method has a no-op default, and noop() ignores everything")
  void noopDefaults() {
    assertThatCode(() -> callEverything(new MetricsListener() {})).doesNotThrowAnyException();
    assertThatCode(() -> callEverything(MetricsListener.noop())).doesNotThrowAnyException();
  }

  @Test
  @DisplayName("composite forwards every call to each listener in order, past a broken one")
  void composite() {
    Recording first = new Recording();
    Recording second = new Recording();
    MetricsListener all = MetricsListener.composite(List.of(first, new Broken(), second));
    callEverything(all);
    List<String> expected = List.of("depth orders 5", "age orders PT3S", "lag orders billing 7",
        "dlq orders 2", "dropped orders expired 1", "backlog orders STALLED",
        "failed orders billing no offset", "dead-lettered orders billing",
        "share-ack orders billing accept 3", "share-renewed orders billing 2",
        "share-lock-lost orders billing 1");
    assertThat(first.calls).isEqualTo(expected);
    assertThat(second.calls).isEqualTo(expected);
  }

  @Test
  @DisplayName("a timed-out handler call is a failed handler duration for a listener that does"
      + " not override handlerTimedOut, and composite forwards handlerTimedOut as it is")
  void handlerTimedOut() {
    List<String> calls = new ArrayList<>();
    MetricsListener durationsOnly = new MetricsListener() {
      @Override
      public void handlerDuration(String destination, String group, Duration duration,
          boolean failed) {
        calls.add("duration " + destination + " " + group + " " + duration + " " + failed);
      }
    };
    MetricsListener timeouts = new MetricsListener() {
      @Override
      public void handlerTimedOut(String destination, String group, Duration duration) {
        calls.add("timeout " + destination + " " + group + " " + duration);
      }
    };
    MetricsListener.composite(List.of(durationsOnly, new Broken(), timeouts))
        .handlerTimedOut("orders", "billing", Duration.ofSeconds(2));
    assertThat(calls).containsExactly("duration orders billing PT2S true",
        "timeout orders billing PT2S");
  }

  @Test
  @DisplayName("composite rejects a null listener")
  void compositeNull() {
    assertThatThrownBy(() -> MetricsListener.composite(Arrays.asList(new Recording(), null)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("listeners must not contain null");
  }

  @Test
  @DisplayName("safely contains runtime exceptions and linkage errors from a listener")
  void safely() {
    Broken broken = new Broken();
    assertThatCode(() -> MetricsListener.safely(broken, m -> m.backlogDepth("orders", 1)))
        .doesNotThrowAnyException();
    assertThatCode(() -> MetricsListener.safely(broken, m -> m.dropped("orders", "capacity", 1)))
        .doesNotThrowAnyException();
    Recording ok = new Recording();
    MetricsListener.safely(ok, m -> m.deadLetterDepth("orders", 9));
    assertThat(ok.calls).containsExactly("dlq orders 9");
  }
}

package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.Race;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class DeadLetterReplayerTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore();
  private final LifecycleLog log = new LifecycleLog(100);
  private final List<DeadLetter> resent = new CopyOnWriteArrayList<>();

  private DeadLetter dead() {
    Message m = Message.builder().type("order.paid").key("o-1").payload("{}").build();
    DeadLetter d = DeadLetter.of(m, "orders", "attempts exhausted (5 of 5)",
        new IOException("down"), 5, clock.instant().minusSeconds(60), clock.instant());
    store.add(d);
    return d;
  }

  @Test
  @DisplayName("replaying resends the dead letter unchanged, removes it and reports REPLAYED with"
      + " its trace id")
  void replays() {
    DeadLetter d = dead();
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, resent::add, log, clock);

    assertThat(replayer.replay(d.id())).contains(d);

    assertThat(resent).containsExactly(d);
    assertThat(store.find(d.id())).isEmpty();
    List<LifecycleEvent> events = log.trace(d.message().traceId());
    assertThat(events).extracting(LifecycleEvent::stage)
        .containsExactly(LifecycleEvent.Stage.REPLAYED);
    assertThat(events.get(0).at()).isEqualTo(clock.instant());
  }

  @Test
  @DisplayName("replaying the same id twice resends it once")
  void replayTwiceResendsOnce() {
    DeadLetter d = dead();
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, resent::add, log, clock);

    assertThat(replayer.replay(d.id())).isPresent();
    assertThat(replayer.replay(d.id())).isEmpty();

    assertThat(resent).hasSize(1);
  }

  @Test
  @DisplayName("8 operators replaying the same id at once resend it once")
  void concurrentReplaysResendOnce() {
    DeadLetter d = dead();
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, resent::add, log, clock);

    List<Optional<DeadLetter>> results =
        Race.run(8, Duration.ofSeconds(30), i -> replayer.replay(d.id()));

    assertThat(results).filteredOn(Optional::isPresent).hasSize(1);
    assertThat(resent).containsExactly(d);
  }

  @Test
  @DisplayName("a failing resend puts the dead letter back unchanged and reports the failure")
  void failingResendPutsBack() {
    DeadLetter d = dead();
    IOException down = new IOException("broker down");
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> {
      throw down;
    }, log, clock);

    assertThatThrownBy(() -> replayer.replay(d.id()))
        .isInstanceOf(DeadLetterReplayer.ReplayException.class)
        .hasMessageContaining(d.id())
        .hasCause(down);

    assertThat(store.find(d.id())).contains(d);
    assertThat(log.all()).isEmpty();
    DeadLetterReplayer working = new DeadLetterReplayer(store, resent::add, log, clock);
    assertThat(working.replay(d.id())).contains(d);
    assertThat(resent).containsExactly(d);
  }

  @Test
  @DisplayName("a blank id throws IllegalArgumentException naming the id")
  void blankId() {
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, resent::add, log, clock);

    assertThatThrownBy(() -> replayer.replay(" "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("id");
  }
}

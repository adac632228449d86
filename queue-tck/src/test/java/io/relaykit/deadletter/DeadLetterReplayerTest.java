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
  @DisplayName("8 operators replaying the same id at once resend it once; the others find it gone"
      + " or in progress")
  void concurrentReplaysResendOnce() {
    DeadLetter d = dead();
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, resent::add, log, clock);

    List<Optional<DeadLetter>> results = Race.run(8, Duration.ofSeconds(30), i -> {
      try {
        return replayer.replay(d.id());
      } catch (ReplayInProgressException e) {
        return Optional.empty();
      }
    });

    assertThat(results).filteredOn(Optional::isPresent).hasSize(1);
    assertThat(store.find(d.id())).isEmpty();
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

  /** A store whose next call of one method completes and then throws, as after a lost reply. */
  private DeadLetterStore losingReplyOf(String method) {
    return io.relaykit.tck.LostReply.over(DeadLetterStore.class, store).dropNextReplyOf(method)
        .store();
  }

  @Test
  @DisplayName("the dead letter is in the store while it is resent, so a crash during the resend"
      + " loses nothing")
  void keptDuringResend() {
    DeadLetter d = dead();
    List<Optional<DeadLetter>> seen = new CopyOnWriteArrayList<>();
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> {
      seen.add(store.find(x.id()));
      resent.add(x);
    }, log, clock);

    assertThat(replayer.replay(d.id())).contains(d);

    assertThat(seen).containsExactly(Optional.of(d));
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a lost reply on the first store write of a replay neither loses the dead letter"
      + " nor keeps it from being resent")
  void lostReplyOnTakeLosesNothing() {
    DeadLetter d = dead();
    DeadLetterStore losing = losingReplyOf(store.marksReplays() ? "beginReplay" : "remove");
    DeadLetterReplayer replayer = new DeadLetterReplayer(losing, resent::add, log, clock);

    Optional<DeadLetter> first;
    try {
      first = replayer.replay(d.id());
    } catch (RuntimeException e) {
      first = Optional.empty(); // the operator retries
    }
    if (first.isEmpty()) {
      replayer.replay(d.id());
    }

    assertThat(resent).containsExactly(d);
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a lost reply on the removal after the resend: the replay succeeds, resent once,"
      + " the dead letter gone")
  void lostReplyOnFinish() {
    DeadLetter d = dead();
    DeadLetterReplayer replayer = new DeadLetterReplayer(losingReplyOf("finishReplay"),
        resent::add, log, clock);

    assertThat(replayer.replay(d.id())).contains(d);

    assertThat(resent).containsExactly(d);
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a removal that keeps failing after a confirmed resend: ReplayException saying it was"
      + " resent; the dead letter stays, marked, and is replayed again once the mark lapses")
  void finishKeepsFailing() {
    FakeClock storeClock = new FakeClock();
    InMemoryDeadLetterStore marked = new InMemoryDeadLetterStore(storeClock);
    DeadLetter d = dead();
    marked.add(d);
    DeadLetterStore broken = new io.relaykit.tck.ForwardingDeadLetterStore(marked) {
      @Override
      public boolean finishReplay(String id, String token) {
        throw new IllegalStateException("store down");
      }
    };
    DeadLetterReplayer replayer = new DeadLetterReplayer(broken, resent::add, log, clock,
        Duration.ofSeconds(30));

    assertThatThrownBy(() -> replayer.replay(d.id()))
        .isInstanceOf(DeadLetterReplayer.ReplayException.class)
        .hasMessageContaining("was resent");
    assertThat(marked.find(d.id())).contains(d);
    assertThatThrownBy(() -> new DeadLetterReplayer(marked, resent::add, log, clock)
        .replay(d.id())).isInstanceOf(ReplayInProgressException.class);

    storeClock.advance(Duration.ofSeconds(31));
    assertThat(new DeadLetterReplayer(marked, resent::add, log, clock).replay(d.id()))
        .contains(d);
    assertThat(resent).containsExactly(d, d);
    assertThat(marked.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a message dead-lettered again during its replay is not removed by that replay")
  void deadLetteredAgainDuringReplay() {
    DeadLetter d = dead();
    DeadLetter again = DeadLetter.of(d.message(), "orders", "failed again", null, 1,
        clock.instant(), clock.instant().plusSeconds(5));
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> {
      resent.add(x);
      store.add(again);
    }, log, clock);

    assertThat(replayer.replay(d.id())).contains(d);

    assertThat(store.find(d.id())).contains(again);
  }
}

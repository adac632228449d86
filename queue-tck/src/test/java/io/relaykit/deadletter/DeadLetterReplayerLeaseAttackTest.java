package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.LostReply;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The replay's check of its own mark after the resend, attacked with leases that lapse mid-way on
 * the store's (fake) clock: no sleeps, every interleaving written out step by step.
 */
@DisplayName("DeadLetterReplayer: leases lapsing mid-way, the re-mark's own lost reply")
class DeadLetterReplayerLeaseAttackTest {

  private static final Duration LEASE = Duration.ofMinutes(1);

  private final FakeClock clock = new FakeClock();
  private final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(clock);
  private final List<String> sent = new CopyOnWriteArrayList<>();

  private DeadLetter dead(String key) {
    Message m = Message.builder().type("order.paid").key(key).payload("{}").build();
    DeadLetter d = DeadLetter.of(m, "orders", "attempts exhausted (5 of 5)",
        new IOException("down"), 5, clock.instant().minusSeconds(60), clock.instant());
    store.add(d);
    return d;
  }

  @Test
  @DisplayName("A's mark lapses, B takes it over and resends, then B's mark lapses too (B"
      + " stalls): A takes the mark back and removes the entry; B's own check then reports the"
      + " lapse, so the pair reports the second send")
  void takeoverThatLapsedToo() throws Exception {
    DeadLetter d = dead("o-1");
    CountDownLatch bResent = new CountDownLatch(1);
    CountDownLatch aDone = new CountDownLatch(1);
    DeadLetterReplayer b = new DeadLetterReplayer(store, x -> {
      sent.add("b");
      clock.advance(LEASE.plusSeconds(1));
      bResent.countDown();
      assertThat(aDone.await(10, TimeUnit.SECONDS)).isTrue();
    }, LifecycleListener.noop(), clock, LEASE);
    CompletableFuture<Throwable> bOutcome = new CompletableFuture<>();
    DeadLetterReplayer a = new DeadLetterReplayer(store, x -> {
      sent.add("a");
      clock.advance(LEASE.plusSeconds(1));
      Thread t = new Thread(() -> {
        try {
          b.replay(x.id());
          bOutcome.complete(null);
        } catch (Throwable e) {
          bOutcome.complete(e);
        }
      }, "replayer-b");
      t.setDaemon(true);
      t.start();
      assertThat(bResent.await(10, TimeUnit.SECONDS)).isTrue();
    }, LifecycleListener.noop(), clock, LEASE);

    try {
      assertThat(a.replay(d.id())).contains(d);
    } finally {
      aDone.countDown();
    }
    assertThat(bOutcome.get(10, TimeUnit.SECONDS)).isInstanceOf(ReplayMarkLapsedException.class)
        .hasMessageContaining("no longer in the store");
    assertThat(sent).containsExactly("a", "b");
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("A's mark lapses and nobody touches the dead letter: A re-marks, removes it and"
      + " reports success (sent once)")
  void lapsedUntouched() {
    DeadLetter d = dead("o-2");
    DeadLetterReplayer a = new DeadLetterReplayer(store, x -> {
      sent.add("a");
      clock.advance(LEASE.multipliedBy(3));
    }, LifecycleListener.noop(), clock, LEASE);

    assertThat(a.replay(d.id())).contains(d);
    assertThat(sent).containsExactly("a");
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("A's mark lapses, B takes it over, its resend fails and it unmarks: A's resend was"
      + " the only one; A takes the mark back, removes the entry and reports success")
  void takeoverThatFailed() {
    DeadLetter d = dead("o-3");
    DeadLetterReplayer b = new DeadLetterReplayer(store, x -> {
      throw new IOException("broker down");
    }, LifecycleListener.noop(), clock, LEASE);
    DeadLetterReplayer a = new DeadLetterReplayer(store, x -> {
      sent.add("a");
      clock.advance(LEASE.plusSeconds(1));
      assertThatThrownBy(() -> b.replay(x.id()))
          .isInstanceOf(DeadLetterReplayer.ReplayException.class);
    }, LifecycleListener.noop(), clock, LEASE);

    assertThat(a.replay(d.id())).contains(d);
    assertThat(sent).containsExactly("a");
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("the re-mark after the resend loses its reply: retried with the same token, the"
      + " dead letter is removed, sent once, success")
  void reMarkLostReply() {
    DeadLetter d = dead("o-4");
    LostReply<DeadLetterStore> seam = LostReply.over(DeadLetterStore.class, store);
    DeadLetterReplayer a = new DeadLetterReplayer(seam.store(), x -> {
      sent.add("a");
      // The next beginReplay is the check of this replay's mark after the resend.
      seam.dropNextReplyOf("beginReplay");
    }, LifecycleListener.noop(), clock, LEASE);

    assertThat(a.replay(d.id())).contains(d);
    assertThat(seam.dropped()).isEqualTo(1);
    assertThat(sent).containsExactly("a");
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a batch of replays where one id's mark lapses: each id is reported on its own,"
      + " the lapsed one as lapsed, the others replayed")
  void batchReportsEach() {
    List<DeadLetter> all = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      all.add(dead("batch-" + i));
    }
    String slow = all.get(2).id();
    DeadLetterReplayer a = new DeadLetterReplayer(store, x -> {
      sent.add(x.id());
      if (x.id().equals(slow)) {
        clock.advance(LEASE.plusSeconds(1));
        store.beginReplay(x.id(), "other", LEASE);
      }
    }, LifecycleListener.noop(), clock, LEASE);

    List<String> outcomes = new ArrayList<>();
    for (DeadLetter d : all) {
      try {
        outcomes.add(a.replay(d.id()).isPresent() ? "replayed" : "none");
      } catch (ReplayMarkLapsedException e) {
        outcomes.add("lapsed");
      }
    }
    assertThat(outcomes).containsExactly("replayed", "replayed", "lapsed", "replayed",
        "replayed");
    assertThat(store.list(DeadLetterQuery.all())).extracting(DeadLetter::id).containsExactly(slow);
  }
}

package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueueJournal.Change;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.queue.ReportEvent;
import io.relaykit.queue.ReportQueue;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link QueueJournal} passes: the replay rules of its Javadoc, order, unknown
 * ids, durability across a restart, and data fidelity (large, unicode, many).
 *
 * <p>A backend test subclasses this with two factory methods. {@link #openJournal()} opens a
 * journal on fresh, empty storage; {@link #reopenJournal()} opens a new instance on the storage of
 * the last opened one, as a restarted process would. When reopening, the previous instance may
 * still be open and unflushed: that is a simulated crash, and the kit never uses it again (it
 * closes every instance it opened after each test, ignoring failures, so a backend can release
 * resources). Times in this kit have millisecond precision; a backend must keep at least that.
 *
 * <p>A backend that records {@link QueueJournal#recordAtomically} one change at a time (the
 * interface's default) says so by overriding {@link #writesChangesAtomically()}; the kit then
 * checks the weaker promise of the default (a crash keeps a prefix of the list).
 */
public abstract class QueueJournalContract {

  /** For a subclass that binds the kit to one backend. */
  protected QueueJournalContract() {}

  /**
   * Opens a journal on new, empty storage. The kit loads it before recording anything.
   *
   * @return a journal not yet loaded
   * @throws Exception if the backend cannot be opened; the test fails with it
   */
  protected abstract QueueJournal openJournal() throws Exception;

  /**
   * Opens a new journal instance on the storage of the last opened one, as after a restart. The
   * previous instance may have been closed, flushed, or neither (a crash).
   *
   * @return a journal not yet loaded, on the storage of the last opened one
   * @throws Exception if the backend cannot be opened; the test fails with it
   */
  protected abstract QueueJournal reopenJournal() throws Exception;

  /**
   * Whether {@link QueueJournal#recordAtomically} writes its list as one change (all or none after
   * a crash, all durable together). True unless overridden.
   *
   * @return true to check all-or-none after a crash; false to check only that a crash keeps a
   *     prefix of the list
   */
  protected boolean writesChangesAtomically() {
    return true;
  }

  /** A fixed base time with non-zero milliseconds, so a backend that truncates to seconds fails. */
  protected static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");

  private final List<QueueJournal> opened = new ArrayList<>();

  @AfterEach
  void closeEverything() {
    for (int i = opened.size() - 1; i >= 0; i--) {
      try {
        opened.get(i).close();
      } catch (RuntimeException | Error ignored) {
        // An instance abandoned by a simulated crash may refuse to close; that is fine here.
      }
    }
    opened.clear();
  }

  /**
   * A newly opened journal on empty storage, loaded (so changes may be recorded); closed by the kit
   * after the test.
   *
   * @return the loaded journal
   * @throws Exception from {@link #openJournal()}
   * @throws AssertionError if the new storage does not load empty
   */
  protected QueueJournal fresh() throws Exception {
    QueueJournal journal = track(openJournal());
    assertThat(journal.load()).as("a journal on new storage loads empty")
        .isEqualTo(JournalState.empty());
    return journal;
  }

  /**
   * A new instance on the same storage, loaded: what a restarted process recovers. The instance is
   * closed by the kit after the test.
   *
   * @return the state the new instance loaded
   * @throws Exception from {@link #reopenJournal()}
   */
  protected JournalState restart() throws Exception {
    return track(reopenJournal()).load();
  }

  /** A {@linkplain #fresh() fresh} journal with {@code event(id)} appended for each id, in order. */
  private QueueJournal freshWith(String... ids) throws Exception {
    QueueJournal journal = fresh();
    for (String id : ids) {
      journal.append(event(id));
    }
    return journal;
  }

  /** Closes {@code journal} and returns what a {@linkplain #restart() restart} then loads. */
  private JournalState closeAndRestart(QueueJournal journal) throws Exception {
    journal.close();
    return restart();
  }

  /**
   * A journal reopened after a restart and the state it loaded.
   *
   * @param journal the reopened, loaded instance, to keep recording on
   * @param state what it loaded
   */
  protected record Reopened(QueueJournal journal, JournalState state) {
  }

  /**
   * Like {@link #restart()} but also returns the instance, to keep recording.
   *
   * @return the loaded instance and its state; the kit closes the instance after the test
   * @throws Exception from {@link #reopenJournal()}
   */
  protected Reopened reopenLoaded() throws Exception {
    QueueJournal journal = track(reopenJournal());
    return new Reopened(journal, journal.load());
  }

  private QueueJournal track(QueueJournal journal) {
    opened.add(journal);
    return journal;
  }

  /**
   * A fresh event: no attempts, ready at {@code enqueuedAt}, type {@code test.event}, a small JSON
   * payload naming the id, no expiry.
   *
   * @param id the event id
   * @param priority the event's priority
   * @param enqueuedAt when it was enqueued and when it is first ready
   * @return the event
   */
  protected static QueuedEvent event(String id, Priority priority, Instant enqueuedAt) {
    return new QueuedEvent(id, "test.event", "{\"id\":\"" + id + "\"}", priority, enqueuedAt, 0,
        enqueuedAt, null);
  }

  /**
   * {@link #event(String, Priority, Instant)} with NORMAL priority at {@link #T0}.
   *
   * @param id the event id
   * @return the event
   */
  protected static QueuedEvent event(String id) {
    return event(id, Priority.NORMAL, T0);
  }

  private static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }

  @Nested
  @DisplayName("appending")
  class Appending {

    @Test
    @DisplayName("a journal on new storage loads an empty state")
    void emptyOnNewStorage() throws Exception {
      fresh().close();
      assertThat(restart()).isEqualTo(JournalState.empty());
    }

    @Test
    @DisplayName("an appended event is pending, with every field intact, and seen at its enqueue time")
    void appendedIsPendingAndSeen() throws Exception {
      QueueJournal journal = fresh();
      QueuedEvent plain = new QueuedEvent("e-1", "payment.captured", "{\"amount\":1250}",
          Priority.CRITICAL, T0, 0, T0, null);
      QueuedEvent expiring = new QueuedEvent("e-2", "otp.sent", "code=123456", Priority.LOW,
          T0.plusMillis(7), 2, T0.plusSeconds(4).plusMillis(1), T0.plus(Duration.ofMinutes(5)));
      journal.append(plain);
      journal.append(expiring);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(plain, expiring);
      assertThat(state.dead()).isEmpty();
      assertThat(state.seen()).containsExactly(
          Map.entry("e-1", T0), Map.entry("e-2", T0.plusMillis(7)));
    }

    @Test
    @DisplayName("pending events come back in the order they were appended, whatever their priority")
    void appendOrder() throws Exception {
      QueueJournal journal = fresh();
      List<String> expected = new ArrayList<>();
      Priority[] priorities = Priority.values();
      for (int i = 0; i < 30; i++) {
        String id = "order-" + (29 - i);
        journal.append(event(id, priorities[i % 3], T0.plusMillis(i)));
        expected.add(id);
      }
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactlyElementsOf(expected);
      assertThat(state.seen().keySet()).containsExactlyElementsOf(expected);
    }
  }

  @Nested
  @DisplayName("removing")
  class Removing {

    @Test
    @DisplayName("an acked event leaves pending and stays seen")
    void acked() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.remove("a", Removal.ACKED);
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("b");
      assertThat(state.seen()).containsOnlyKeys("a", "b");
    }

    @Test
    @DisplayName("an expired event leaves pending and stays seen")
    void expired() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.remove("a", Removal.EXPIRED);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).isEmpty();
      assertThat(state.seen()).containsOnlyKeys("a");
    }

    @Test
    @DisplayName("a dropped event leaves pending and is forgotten, so it may be reported again")
    void dropped() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.remove("a", Removal.DROPPED);
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("b");
      assertThat(state.seen()).containsOnlyKeys("b");
    }

    @Test
    @DisplayName("a purged dead letter leaves the dead letters and stays seen")
    void purged() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.deadLetter("a", 5, "attempts exhausted");
      journal.deadLetter("b", 1, "rejected");
      journal.remove("a", Removal.PURGED);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).isEmpty();
      assertThat(ids(state.dead())).containsExactly("b");
      assertThat(state.deadReasons()).containsOnly(Map.entry("b", "rejected"));
      assertThat(state.seen()).containsOnlyKeys("a", "b");
    }
  }

  @Nested
  @DisplayName("rescheduling and dead letters")
  class Attempts {

    @Test
    @DisplayName("a rescheduled event keeps its place and carries its new attempts and next attempt time")
    void rescheduled() throws Exception {
      QueueJournal journal = fresh();
      journal.append(event("a", Priority.NORMAL, T0));
      journal.append(event("b", Priority.NORMAL, T0.plusMillis(1)));
      journal.reschedule("a", 1, T0.plusSeconds(1));
      journal.reschedule("a", 2, T0.plusSeconds(3).plusMillis(5));
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("a", "b");
      QueuedEvent a = state.pending().get(0);
      assertThat(a.attempts()).isEqualTo(2);
      assertThat(a.nextAttemptAt()).isEqualTo(T0.plusSeconds(3).plusMillis(5));
      assertThat(a.enqueuedAt()).as("enqueue time is not an attempt change").isEqualTo(T0);
      assertThat(a.payload()).isEqualTo(event("a").payload());
    }

    @Test
    @DisplayName("a dead-lettered event moves from pending to dead with its attempts and reason, and stays seen")
    void deadLettered() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.reschedule("a", 4, T0.plusSeconds(8));
      journal.deadLetter("a", 5, "attempts exhausted (5 of 5)");
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("b");
      assertThat(state.dead()).hasSize(1);
      QueuedEvent dead = state.dead().get(0);
      assertThat(dead.eventId()).isEqualTo("a");
      assertThat(dead.attempts()).isEqualTo(5);
      assertThat(dead.payload()).isEqualTo(event("a").payload());
      assertThat(state.deadReasons()).containsOnly(Map.entry("a", "attempts exhausted (5 of 5)"));
      assertThat(state.seen()).containsOnlyKeys("a", "b");
    }

    @Test
    @DisplayName("a replayed dead letter (purged, then appended again) is pending behind the others")
    void replayedDeadLetter() throws Exception {
      QueueJournal journal = freshWith("a", "b", "c");
      journal.deadLetter("a", 5, "attempts exhausted (5 of 5)");
      journal.deadLetter("c", 1, "rejected");
      journal.remove("a", Removal.PURGED);
      journal.append(event("a").rescheduled(0, T0.plusSeconds(60)));
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("b", "a");
      QueuedEvent a = state.pending().get(1);
      assertThat(a.attempts()).isZero();
      assertThat(a.nextAttemptAt()).isEqualTo(T0.plusSeconds(60));
      assertThat(a.payload()).isEqualTo(event("a").payload());
      assertThat(ids(state.dead())).containsExactly("c");
      assertThat(state.deadReasons()).containsOnly(Map.entry("c", "rejected"));
      assertThat(state.seen()).containsOnlyKeys("a", "b", "c");
    }

    @Test
    @DisplayName("dead letters come back in the order they died")
    void deadOrder() throws Exception {
      QueueJournal journal = freshWith("a", "b", "c");
      journal.deadLetter("c", 1, "rejected");
      journal.deadLetter("a", 1, "rejected");
      assertThat(ids(closeAndRestart(journal).dead())).containsExactly("c", "a");
    }
  }

  @Nested
  @DisplayName("forgetting")
  class Forgetting {

    @Test
    @DisplayName("a forgotten id is no longer seen, and the others stay")
    void forgotten() throws Exception {
      QueueJournal journal = fresh();
      journal.append(event("a", Priority.NORMAL, T0));
      journal.append(event("b", Priority.NORMAL, T0.plusMillis(1)));
      journal.append(event("c", Priority.NORMAL, T0.plusMillis(2)));
      journal.remove("a", Removal.ACKED);
      journal.remove("b", Removal.ACKED);
      journal.forget("a");
      JournalState state = closeAndRestart(journal);
      assertThat(state.seen()).containsExactly(
          Map.entry("b", T0.plusMillis(1)), Map.entry("c", T0.plusMillis(2)));
      assertThat(ids(state.pending())).containsExactly("c");
    }

    @Test
    @DisplayName("a forgotten id can be appended again and is seen at its new time")
    void appendAgain() throws Exception {
      QueueJournal journal = fresh();
      journal.append(event("a", Priority.NORMAL, T0));
      journal.remove("a", Removal.ACKED);
      journal.forget("a");
      QueuedEvent again = new QueuedEvent("a", "test.event", "second", Priority.CRITICAL,
          T0.plusSeconds(60), 0, T0.plusSeconds(60), null);
      journal.append(again);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(again);
      assertThat(state.seen()).containsExactly(Map.entry("a", T0.plusSeconds(60)));
    }
  }

  @Nested
  @DisplayName("order and unknown ids")
  class OrderAndUnknown {

    @Test
    @DisplayName("changes apply in the order they were recorded")
    void order() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.remove("a", Removal.DROPPED);
      QueuedEvent second = new QueuedEvent("a", "test.event", "second", Priority.LOW,
          T0.plusSeconds(1), 0, T0.plusSeconds(1), null);
      journal.append(second);
      journal.append(event("b", Priority.NORMAL, T0.plusSeconds(2)));
      journal.reschedule("b", 1, T0.plusSeconds(3));
      journal.deadLetter("b", 2, "gave up");
      journal.append(event("c", Priority.NORMAL, T0.plusSeconds(4)));
      journal.deadLetter("c", 1, "first");
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(second);
      assertThat(ids(state.dead())).containsExactly("b", "c");
      assertThat(state.dead().get(0).attempts()).isEqualTo(2);
      assertThat(state.deadReasons()).containsOnly(Map.entry("b", "gave up"),
          Map.entry("c", "first"));
      assertThat(state.seen()).containsExactly(Map.entry("a", T0.plusSeconds(1)),
          Map.entry("b", T0.plusSeconds(2)), Map.entry("c", T0.plusSeconds(4)));
    }

    @Test
    @DisplayName("changes that name unknown ids are ignored")
    void unknownIgnored() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.remove("ghost-1", Removal.ACKED);
      journal.remove("ghost-2", Removal.DROPPED);
      journal.remove("ghost-3", Removal.PURGED);
      journal.reschedule("ghost-4", 3, T0.plusSeconds(9));
      journal.deadLetter("ghost-5", 2, "never there");
      journal.forget("ghost-6");
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(event("a"));
      assertThat(state.dead()).isEmpty();
      assertThat(state.deadReasons()).isEmpty();
      assertThat(state.seen()).containsOnlyKeys("a");
    }

    @Test
    @DisplayName("changes to an id that already left are ignored")
    void alreadyGone() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.remove("a", Removal.ACKED);
      journal.reschedule("a", 1, T0.plusSeconds(1));
      journal.deadLetter("a", 1, "too late");
      journal.remove("a", Removal.ACKED);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).isEmpty();
      assertThat(state.dead()).isEmpty();
      assertThat(state.seen()).containsOnlyKeys("a");
    }

    @Test
    @DisplayName("a journal reopened after a restart keeps recording on top of what it replayed")
    void recordsAfterRestart() throws Exception {
      QueueJournal first = freshWith("a", "b");
      first.close();

      Reopened reopened = reopenLoaded();
      assertThat(ids(reopened.state().pending())).containsExactly("a", "b");
      QueueJournal second = reopened.journal();
      second.remove("a", Removal.ACKED);
      second.append(event("c"));
      second.close();

      JournalState state = restart();
      assertThat(ids(state.pending())).containsExactly("b", "c");
      assertThat(state.seen()).containsOnlyKeys("a", "b", "c");
    }
  }

  @Nested
  @DisplayName("one rule per case")
  class Rules {

    @Test
    @DisplayName("an append of a pending id replaces the event in its place and keeps its seen time")
    void appendOfPendingReplaces() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      QueuedEvent replaced = new QueuedEvent("a", "test.event", "second", Priority.CRITICAL,
          T0.plusSeconds(5), 2, T0.plusSeconds(9), null);
      journal.append(replaced);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(replaced, event("b"));
      assertThat(state.seen()).containsExactly(Map.entry("a", T0), Map.entry("b", T0));
    }

    @Test
    @DisplayName("an append of a dead id replays it: the dead letter and its reason go, the event is pending last, seen as before")
    void appendOfDeadReplays() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.deadLetter("a", 3, "attempts exhausted");
      QueuedEvent replayed = event("a").rescheduled(0, T0.plusSeconds(30));
      journal.append(replayed);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(event("b"), replayed);
      assertThat(state.dead()).isEmpty();
      assertThat(state.deadReasons()).isEmpty();
      assertThat(state.seen()).containsExactly(Map.entry("a", T0), Map.entry("b", T0));
    }

    @Test
    @DisplayName("a replayed event that dies again is a dead letter after the others, with its new reason")
    void replayedDiesAgain() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.deadLetter("a", 3, "first");
      journal.deadLetter("b", 1, "other");
      journal.append(event("a"));
      journal.deadLetter("a", 1, "second");
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.dead())).containsExactly("b", "a");
      assertThat(state.dead().get(1).attempts()).isEqualTo(1);
      assertThat(state.deadReasons()).containsOnly(Map.entry("a", "second"),
          Map.entry("b", "other"));
    }

    @Test
    @DisplayName("a DROPPED removal of a dead id changes nothing: dead letters are purged, never dropped")
    void droppedDeadIgnored() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.deadLetter("a", 2, "rejected");
      journal.remove("a", Removal.DROPPED);
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.dead())).containsExactly("a");
      assertThat(state.deadReasons()).containsOnly(Map.entry("a", "rejected"));
      assertThat(state.seen()).containsOnlyKeys("a");
    }

    @Test
    @DisplayName("a dead letter of an id that is already dead keeps its first death")
    void deadTwiceKeepsFirst() throws Exception {
      QueueJournal journal = freshWith("a");
      journal.deadLetter("a", 2, "first");
      journal.deadLetter("a", 7, "second");
      JournalState state = closeAndRestart(journal);
      assertThat(state.dead()).singleElement().satisfies(d -> assertThat(d.attempts()).isEqualTo(2));
      assertThat(state.deadReasons()).containsOnly(Map.entry("a", "first"));
    }

    @Test
    @DisplayName("forgetting a dead id keeps the dead letter and forgets only the id")
    void forgetDead() throws Exception {
      QueueJournal journal = freshWith("a", "b");
      journal.deadLetter("a", 1, "rejected");
      journal.forget("a");
      journal.forget("b");
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.dead())).containsExactly("a");
      assertThat(ids(state.pending())).as("a pending id is never forgotten").containsExactly("b");
      assertThat(state.seen()).containsOnlyKeys("b");
    }

    @Test
    @DisplayName("a blank or null dead reason is refused naming the reason, and nothing is recorded")
    void blankReasonRefused() throws Exception {
      QueueJournal journal = freshWith("a");
      for (String reason : new String[] {null, "", "   ", "\t\n"}) {
        assertThatThrownBy(() -> journal.deadLetter("a", 1, reason))
            .as("reason %s", reason == null ? "null" : "'" + reason + "'")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reason");
      }
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(event("a"));
      assertThat(state.dead()).isEmpty();
    }

    @Test
    @DisplayName("every change recorded twice in a row gives the state of recording it once (a retry after an unknown outcome)")
    void changesAreIdempotent() throws Exception {
      List<Consumer<QueueJournal>> script = List.of(
          j -> j.append(event("a", Priority.NORMAL, T0)),
          j -> j.append(event("b", Priority.CRITICAL, T0.plusMillis(1))),
          j -> j.append(event("c", Priority.LOW, T0.plusMillis(2))),
          j -> j.append(event("d", Priority.LOW, T0.plusMillis(3))),
          j -> j.reschedule("a", 1, T0.plusSeconds(2)),
          j -> j.deadLetter("b", 4, "attempts exhausted"),
          j -> j.remove("c", Removal.ACKED),
          j -> j.forget("c"),
          j -> j.remove("d", Removal.DROPPED),
          j -> j.append(event("b").rescheduled(0, T0.plusSeconds(4))),
          j -> j.deadLetter("b", 1, "again"),
          j -> j.remove("b", Removal.PURGED));
      QueueJournal once = fresh();
      script.forEach(step -> step.accept(once));
      JournalState expected = closeAndRestart(once);
      QueueJournal twice = fresh();
      script.forEach(step -> {
        step.accept(twice);
        step.accept(twice);
      });
      assertThat(closeAndRestart(twice)).isEqualTo(expected);
      assertThat(ids(expected.pending())).containsExactly("a");
      assertThat(expected.seen()).containsOnlyKeys("a", "b");
    }
  }

  @Nested
  @DisplayName("atomic changes")
  class Atomic {

    @Test
    @DisplayName("recordAtomically applies every change of its list, in order")
    void appliesInOrder() throws Exception {
      QueueJournal journal = freshWith("old", "acked");
      journal.remove("acked", Removal.ACKED);
      journal.recordAtomically(List.of(
          new Change.Append(event("new", Priority.NORMAL, T0.plusMillis(5))),
          new Change.Remove("old", Removal.DROPPED),
          new Change.Forget("acked")));
      journal.recordAtomically(List.of(new Change.Append(event("x", Priority.LOW, T0)),
          new Change.Reschedule("x", 2, T0.plusSeconds(3)),
          new Change.DeadLetter("x", 3, "gave up")));
      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactly("new");
      assertThat(ids(state.dead())).containsExactly("x");
      assertThat(state.dead().get(0).attempts()).isEqualTo(3);
      assertThat(state.deadReasons()).containsOnly(Map.entry("x", "gave up"));
      assertThat(state.seen()).containsOnlyKeys("new", "x");
    }

    @Test
    @DisplayName("a critical append in an atomic list survives a crash once awaitDurable returns, with the rest of the list if the backend writes it atomically")
    void criticalListDurable() throws Exception {
      QueueJournal journal = freshWith("victim");
      journal.flush();
      QueuedEvent pay = event("pay", Priority.CRITICAL, T0.plusMillis(1));
      long ticket = journal.recordAtomically(List.of(new Change.Append(pay),
          new Change.Remove("victim", Removal.DROPPED)));
      journal.awaitDurable(ticket);
      // No flush, no close: a crash.
      JournalState state = restart();
      assertThat(state.pending()).contains(pay);
      if (writesChangesAtomically()) {
        assertThat(state.pending()).containsExactly(pay);
        assertThat(state.seen()).containsOnlyKeys("pay");
      } else {
        assertThat(ids(state.pending())).as("a prefix of the list: nothing lost")
            .isSubsetOf("victim", "pay");
      }
    }

    @Test
    @DisplayName("a null, empty or null-holding list is refused and nothing is recorded")
    void badLists() throws Exception {
      QueueJournal journal = freshWith("a");
      List<Change> withNull = new ArrayList<>();
      withNull.add(new Change.Remove("a", Removal.ACKED));
      withNull.add(null);
      assertThatThrownBy(() -> journal.recordAtomically(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("changes");
      assertThatThrownBy(() -> journal.recordAtomically(List.of()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("changes");
      assertThatThrownBy(() -> journal.recordAtomically(withNull))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("changes");
      assertThat(closeAndRestart(journal).pending()).containsExactly(event("a"));
    }

    @Test
    @DisplayName("a change with a bad argument cannot even be built, so no list holds one")
    void changesCheckThemselves() {
      assertThatThrownBy(() -> new Change.Remove(" ", Removal.ACKED))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
      assertThatThrownBy(() -> new Change.Remove("a", null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("removal");
      assertThatThrownBy(() -> new Change.DeadLetter("a", 1, " "))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reason");
      assertThatThrownBy(() -> new Change.Reschedule("a", -1, T0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("attempts");
      assertThatThrownBy(() -> new Change.Forget("a\uD800"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
      assertThatThrownBy(() -> new Change.Append(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("event");
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    /**
     * Ids that no journal may record: blank, holding an unpaired surrogate, or holding U+0000
     * (which a PostgreSQL text column cannot hold).
     */
    private static final String[] BAD_IDS = {null, "", "  ", "id-\uD83D", "\uDC00-id",
        "a\uDBFFb", "a\u0000b", "\u0000"};

    private void refused(ThrowingCallable call, String field) {
      assertThatThrownBy(call).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(field);
    }

    @Test
    @DisplayName("blank ids and ids with unpaired surrogates or U+0000 are refused by every change, naming eventId, and nothing is recorded")
    void badIds() throws Exception {
      QueueJournal journal = freshWith("a");
      for (String id : BAD_IDS) {
        refused(() -> journal.remove(id, Removal.ACKED), "eventId");
        refused(() -> journal.reschedule(id, 1, T0), "eventId");
        refused(() -> journal.deadLetter(id, 1, "reason"), "eventId");
        refused(() -> journal.forget(id), "eventId");
      }
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(event("a"));
      assertThat(state.seen()).containsOnlyKeys("a");
    }

    @Test
    @DisplayName("two ids that differ only in an unpaired surrogate can never collide: an event holding one is refused")
    void surrogatesInEvents() throws Exception {
      QueueJournal journal = fresh();
      refused(() -> journal.append(null), "event");
      refused(() -> journal.append(new QueuedEvent("pay-\uD83D", "n", "p", Priority.CRITICAL, T0,
          0, T0, null)), "eventId");
      refused(() -> journal.append(new QueuedEvent("pay-\uDE00", "n", "p", Priority.NORMAL, T0,
          0, T0, null)), "eventId");
      refused(() -> journal.append(new QueuedEvent("e", "name-\uD800", "p", Priority.NORMAL, T0,
          0, T0, null)), "name");
      refused(() -> journal.append(new QueuedEvent("e", "n", "{\"x\":\"\uDFFF\"}",
          Priority.NORMAL, T0, 0, T0, null)), "payload");
      QueuedEvent pair = new QueuedEvent("pay-\uD83D\uDE00", "n", "💳", Priority.NORMAL, T0, 0,
          T0, null);
      journal.append(pair);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).as("a surrogate pair is fine").containsExactly(pair);
    }

    @Test
    @DisplayName("U+0000 in an id, name or dead reason is refused naming the field, nothing is recorded, and later changes still commit")
    void nulRefused() throws Exception {
      QueueJournal journal = freshWith("a");
      refused(() -> journal.append(new QueuedEvent("nul-\u0000", "n", "p", Priority.CRITICAL, T0,
          0, T0, null)), "eventId");
      refused(() -> journal.append(new QueuedEvent("e1", "na\u0000me", "p", Priority.NORMAL, T0,
          0, T0, null)), "name");
      refused(() -> journal.appendDeferringSync(new QueuedEvent("e2", "\u0000", "p",
          Priority.NORMAL, T0, 0, T0, null)), "name");
      refused(() -> journal.recordAtomically(List.of(new Change.Append(new QueuedEvent("e3\u0000",
          "n", "p", Priority.NORMAL, T0, 0, T0, null)))), "eventId");
      refused(() -> journal.deadLetter("a", 1, "bad \u0000 reason"), "reason");
      QueuedEvent fine = event("b", Priority.CRITICAL, T0);
      journal.append(fine);
      journal.flush();
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).as("the refusals wedged nothing")
          .containsExactly(event("a"), fine);
      assertThat(state.dead()).isEmpty();
      assertThat(state.seen()).containsOnlyKeys("a", "b");
    }

    @Test
    @DisplayName("null removals and times, negative attempts and bad reasons are refused naming the field")
    void badArguments() throws Exception {
      QueueJournal journal = freshWith("a");
      refused(() -> journal.remove("a", null), "removal");
      refused(() -> journal.reschedule("a", 1, null), "nextAttemptAt");
      refused(() -> journal.reschedule("a", -1, T0), "attempts");
      refused(() -> journal.deadLetter("a", -1, "reason"), "attempts");
      refused(() -> journal.deadLetter("a", 1, "bad \uD800 reason"), "reason");
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(event("a"));
      assertThat(state.dead()).isEmpty();
    }
  }

  @Nested
  @DisplayName("durability")
  class Durability {

    @Test
    @DisplayName("a critical append survives a crash right after it returns, without flush or close")
    void criticalDurableBeforeReturn() throws Exception {
      QueueJournal journal = fresh();
      QueuedEvent critical = event("pay-1", Priority.CRITICAL, T0);
      journal.append(critical);
      // No flush, no close: the instance is abandoned as a crashed process would leave it.

      JournalState state = restart();
      assertThat(state.pending()).containsExactly(critical);
      assertThat(state.seen()).containsOnlyKeys("pay-1");
    }

    @Test
    @DisplayName("a critical append whose sync was deferred survives a crash once awaitDurable returns")
    void deferredSync() throws Exception {
      QueueJournal journal = fresh();
      QueuedEvent first = event("pay-1", Priority.CRITICAL, T0);
      QueuedEvent second = event("pay-2", Priority.CRITICAL, T0.plusMillis(1));
      long t1 = journal.appendDeferringSync(first);
      long t2 = journal.appendDeferringSync(second);
      journal.awaitDurable(t2);
      journal.awaitDurable(t1);

      assertThat(restart().pending()).containsExactly(first, second);
    }

    @Test
    @DisplayName("flush makes group-committed changes survive a crash")
    void flushMakesDurable() throws Exception {
      QueueJournal journal = fresh();
      journal.append(event("a", Priority.LOW, T0));
      journal.append(event("b", Priority.NORMAL, T0));
      journal.append(event("c", Priority.NORMAL, T0));
      journal.reschedule("b", 1, T0.plusSeconds(1));
      journal.deadLetter("c", 1, "rejected");
      journal.remove("a", Removal.ACKED);
      journal.flush();

      JournalState state = restart();
      assertThat(ids(state.pending())).containsExactly("b");
      assertThat(state.pending().get(0).attempts()).isEqualTo(1);
      assertThat(ids(state.dead())).containsExactly("c");
      assertThat(state.seen()).containsOnlyKeys("a", "b", "c");
    }

    @Test
    @DisplayName("close makes every change durable")
    void closeMakesDurable() throws Exception {
      QueueJournal journal = fresh();
      for (int i = 0; i < 10; i++) {
        journal.append(event("e" + i, Priority.LOW, T0.plusMillis(i)));
      }
      assertThat(closeAndRestart(journal).pending()).hasSize(10);
    }

    @Test
    @DisplayName("a closed journal refuses further changes")
    void closedRefuses() throws Exception {
      QueueJournal journal = fresh();
      journal.close();
      assertThatThrownBy(() -> journal.append(event("late")))
          .isInstanceOfAny(IllegalStateException.class, JournalException.class);
      assertThat(restart().pending()).isEmpty();
    }

    @Test
    @DisplayName("critical appends from concurrent threads are all durable when each returns")
    void concurrentCriticalAppends() throws Exception {
      QueueJournal journal = fresh();
      int threads = 4;
      int perThread = 25;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int thread = t;
          futures.add(pool.submit(() -> {
            start.await();
            for (int i = 0; i < perThread; i++) {
              journal.append(event("t" + thread + "-" + i, Priority.CRITICAL, T0.plusMillis(i)));
            }
            return null;
          }));
        }
        start.countDown();
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }

      JournalState state = restart();
      assertThat(state.pending()).hasSize(threads * perThread);
      for (int t = 0; t < threads; t++) {
        String prefix = "t" + t + "-";
        List<String> own = ids(state.pending()).stream().filter(id -> id.startsWith(prefix))
            .toList();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < perThread; i++) {
          expected.add(prefix + i);
        }
        assertThat(own).as("one thread's appends keep their order").containsExactlyElementsOf(
            expected);
      }
    }
  }

  @Nested
  @DisplayName("data")
  class Data {

    @Test
    @DisplayName("any Instant round-trips: the year 9999, Instant.MAX from a saturated retry time, Instant.MIN, before 1970, nanoseconds")
    void extremeInstants() throws Exception {
      Instant year9999 = Instant.parse("9999-12-31T23:59:59.999999999Z");
      Instant before1970 = Instant.parse("1969-12-31T23:59:59.000000001Z");
      Instant ancient = Instant.parse("1600-02-29T12:00:00.5Z");
      QueuedEvent a = new QueuedEvent("far", "n", "p", Priority.NORMAL, before1970, 3,
          Instant.MAX, year9999);
      QueuedEvent b = new QueuedEvent("old", "n", "p", Priority.LOW, ancient, 0, Instant.MIN,
          Instant.MAX);
      QueueJournal journal = fresh();
      journal.append(a);
      journal.append(b);
      journal.reschedule("old", 1, year9999);
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(a, b.rescheduled(1, year9999));
      assertThat(state.seen()).containsExactly(Map.entry("far", before1970),
          Map.entry("old", ancient));
    }

    @Test
    @DisplayName("ids chosen to share one String.hashCode, and a payload of 64 KiB of U+0000, come back exactly, each id once, in order, after removals among them")
    void collidingIdsAndNulPayload() throws Exception {
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < 512; i++) {
        StringBuilder b = new StringBuilder("c-");
        for (int bit = 0; bit < 9; bit++) {
          b.append((i >> bit & 1) == 0 ? "Aa" : "BB"); // every id has the same hashCode
        }
        ids.add(b.toString());
      }
      String nul = "\u0000".repeat(64 * 1024);
      QueueJournal journal = fresh();
      Model model = new Model();
      for (int i = 0; i < ids.size(); i++) {
        QueuedEvent e = new QueuedEvent(ids.get(i), "n", i == 7 ? nul : "p" + i,
            i % 3 == 0 ? Priority.CRITICAL : Priority.NORMAL, T0.plusMillis(i), 0, T0, null);
        journal.append(e);
        model.append(e);
      }
      for (int i = 0; i < ids.size(); i += 5) {
        journal.remove(ids.get(i), Removal.ACKED);
        model.remove(ids.get(i), Removal.ACKED);
      }
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactlyElementsOf(model.pending.values());
      assertThat(state.seen().keySet()).containsExactlyElementsOf(ids);
      assertThat(state.pending()).filteredOn(e -> e.eventId().equals(ids.get(7)))
          .extracting(QueuedEvent::payload).containsExactly(nul);
    }

    @Test
    @DisplayName("an id of 512 characters round-trips on every backend; a longer one (a megabyte) is refused by every backend, naming eventId, and nothing is recorded: ids are outside the queue's byte bound, so their length must be bounded everywhere")
    void hugeIdRefused() throws Exception {
      String longest = "L".repeat(QueueJournal.MAX_EVENT_ID_LENGTH);
      String huge = "H".repeat(1 << 20);
      QueueJournal journal = fresh();
      journal.append(event(longest));
      List<ThrowingCallable> calls = List.of(
          () -> journal.append(event(huge)),
          () -> journal.append(event(longest + "x", Priority.CRITICAL, T0)),
          () -> journal.recordAtomically(List.of(new Change.Forget(huge))),
          () -> journal.remove(huge, Removal.ACKED),
          () -> journal.reschedule(huge, 1, T0),
          () -> journal.forget(huge));
      for (ThrowingCallable call : calls) {
        assertThatThrownBy(call).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("eventId");
      }
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).extracting(QueuedEvent::eventId).containsExactly(longest);
      assertThat(state.seen()).containsOnlyKeys(longest);
    }

    @Test
    @DisplayName("a large payload comes back byte for byte")
    void largePayload() throws Exception {
      StringBuilder sb = new StringBuilder(1 << 20);
      Random random = new Random(42);
      while (sb.length() < (1 << 20)) {
        sb.append((char) ('a' + random.nextInt(26)));
      }
      QueuedEvent big = new QueuedEvent("big", "bulk.upload", sb.toString(), Priority.CRITICAL,
          T0, 0, T0, null);
      QueueJournal journal = fresh();
      journal.append(big);
      assertThat(closeAndRestart(journal).pending()).containsExactly(big);
    }

    @Test
    @DisplayName("unicode ids, names, payloads and reasons come back unchanged")
    void unicode() throws Exception {
      String payload = "{\"city\":\"Zürich\",\"名前\":\"山田\",\"emoji\":\"💳🚀\",\"rtl\":\"שלום\","
          + "\"combining\":\"e\u0301\",\"nul\":\"a\u0000b\",\"quote\":\"\\\"'\\n\"}";
      QueuedEvent a = new QueuedEvent("ид-事件-🔑", "paiement.capturé", payload, Priority.NORMAL,
          T0, 0, T0, null);
      QueuedEvent b = new QueuedEvent("b-ü", "ä", "ß", Priority.LOW, T0, 0, T0, null);
      QueueJournal journal = fresh();
      journal.append(a);
      journal.append(b);
      journal.deadLetter("b-ü", 1, "refusé: «invalide» 🚫");
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactly(a);
      assertThat(state.dead()).singleElement().satisfies(d -> {
        assertThat(d.eventId()).isEqualTo("b-ü");
        assertThat(d.name()).isEqualTo("ä");
        assertThat(d.payload()).isEqualTo("ß");
      });
      assertThat(state.deadReasons()).containsOnly(Map.entry("b-ü", "refusé: «invalide» 🚫"));
      assertThat(state.seen()).containsOnlyKeys("ид-事件-🔑", "b-ü");
    }

    @Test
    @DisplayName("many events and changes replay to exactly the state a model of the rules predicts")
    void manyEvents() throws Exception {
      QueueJournal journal = fresh();
      Model model = new Model();
      Random random = new Random(7);
      List<String> live = new ArrayList<>();
      int next = 0;
      for (int step = 0; step < 3000; step++) {
        int op = live.isEmpty() ? 0 : random.nextInt(10);
        if (op < 4) {
          String id = "m-" + next++;
          Priority p = Priority.values()[random.nextInt(3)];
          QueuedEvent e = event(id, p, T0.plusMillis(step));
          journal.append(e);
          model.append(e);
          live.add(id);
        } else {
          String id = live.get(random.nextInt(live.size()));
          switch (op) {
            case 4, 5 -> {
              int attempts = 1 + random.nextInt(4);
              Instant at = T0.plusSeconds(step).plusMillis(attempts);
              journal.reschedule(id, attempts, at);
              model.reschedule(id, attempts, at);
            }
            case 6 -> {
              journal.remove(id, Removal.ACKED);
              model.remove(id, Removal.ACKED);
              live.remove(id);
              if (random.nextBoolean()) {
                journal.forget(id);
                model.forget(id);
              }
            }
            case 7 -> {
              journal.remove(id, Removal.DROPPED);
              model.remove(id, Removal.DROPPED);
              live.remove(id);
            }
            case 8 -> {
              journal.remove(id, Removal.EXPIRED);
              model.remove(id, Removal.EXPIRED);
              live.remove(id);
            }
            default -> {
              journal.deadLetter(id, 5, "reason " + step);
              model.deadLetter(id, 5, "reason " + step);
              live.remove(id);
            }
          }
        }
      }
      JournalState state = closeAndRestart(journal);
      assertThat(state.pending()).containsExactlyElementsOf(model.pending.values());
      assertThat(state.dead()).containsExactlyElementsOf(model.dead.values());
      assertThat(state.deadReasons()).isEqualTo(model.reasons);
      assertThat(new ArrayList<>(state.seen().entrySet()))
          .containsExactlyElementsOf(new ArrayList<>(model.seen.entrySet()));
    }
  }

  /**
   * {@code journal} behind a proxy that counts the calls recording a change (append,
   * appendDeferringSync, remove, reschedule, deadLetter, forget, recordAtomically) in {@code
   * changes} and forwards every call.
   */
  private static QueueJournal counting(QueueJournal journal, AtomicInteger changes) {
    return (QueueJournal) Proxy.newProxyInstance(QueueJournal.class.getClassLoader(),
        new Class<?>[] {QueueJournal.class}, (proxy, method, args) -> {
          switch (method.getName()) {
            case "append", "appendDeferringSync", "remove", "reschedule", "deadLetter", "forget",
                "recordAtomically" -> changes.incrementAndGet();
            default -> { }
          }
          try {
            return method.invoke(journal, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  @Nested
  @DisplayName("a report queue's calls over many ids")
  class QueueBatches {

    @Test
    @DisplayName("a nack of 10 retryable ids, a nack of 20 dead ones pushing 15 out of 5-slot dead letters, and a purge of the 5 are one journal change each, and a restart loads what the queue holds")
    void nackAndPurgeOfManyIdsAreOneChangeEach() throws Exception {
      AtomicInteger changes = new AtomicInteger();
      QueueJournal journal = counting(track(openJournal()), changes);
      FakeClock clock = new FakeClock(T0);
      ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(100)
          .batchSize(100).maxAttempts(3).deadLetters(5, 1 << 20).build();
      queue.restore();
      List<String> retried = new ArrayList<>();
      List<String> dying = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        String id = "nb-" + i;
        (i < 10 ? retried : dying).add(id);
        queue.enqueue(new ReportEvent(id, "test.event", "{\"i\":" + i + "}"));
      }
      assertThat(queue.drainBatch()).hasSize(30);

      changes.set(0);
      List<String> withRepeats = new ArrayList<>(retried);
      withRepeats.add(retried.get(0));
      withRepeats.add("unknown");
      assertThat(queue.nack(withRepeats, true).requeued()).isEqualTo(10);
      assertThat(changes.get()).as("journal changes for a nack of 10 ids").isEqualTo(1);

      changes.set(0);
      assertThat(queue.nack(dying, false).dead()).isEqualTo(20);
      assertThat(changes.get()).as("journal changes for a nack of 20 ids").isEqualTo(1);
      assertThat(queue.deadIds()).containsExactlyElementsOf(dying.subList(15, 20));
      assertThat(queue.stats().deadDropped()).isEqualTo(15);

      changes.set(0);
      List<String> purging = new ArrayList<>(queue.deadIds());
      purging.add("unknown");
      assertThat(queue.purgeDead(purging)).isEqualTo(5);
      assertThat(changes.get()).as("journal changes for a purge of 5 ids").isEqualTo(1);
      assertThat(queue.purgeDead(purging)).as("purged once").isZero();

      JournalState state = closeAndRestart(journal);
      assertThat(ids(state.pending())).containsExactlyElementsOf(retried);
      assertThat(state.pending()).allSatisfy(e -> assertThat(e.attempts()).isEqualTo(1));
      assertThat(state.dead()).isEmpty();
      assertThat(state.seen()).hasSize(30);
    }
  }

  /** The replay rules of {@link QueueJournal}, as the simplest code that states them. */
  private static final class Model {
    final LinkedHashMap<String, QueuedEvent> pending = new LinkedHashMap<>();
    final LinkedHashMap<String, QueuedEvent> dead = new LinkedHashMap<>();
    final Map<String, String> reasons = new LinkedHashMap<>();
    final LinkedHashMap<String, Instant> seen = new LinkedHashMap<>();

    void append(QueuedEvent e) {
      if (dead.remove(e.eventId()) != null) {
        reasons.remove(e.eventId());
      }
      pending.put(e.eventId(), e);
      seen.putIfAbsent(e.eventId(), e.enqueuedAt());
    }

    void remove(String id, Removal removal) {
      boolean wasPending = pending.remove(id) != null;
      if (removal == Removal.DROPPED) {
        if (wasPending) {
          seen.remove(id);
        }
      } else if (!wasPending && dead.remove(id) != null) {
        reasons.remove(id);
      }
    }

    void reschedule(String id, int attempts, Instant at) {
      pending.computeIfPresent(id, (k, e) -> e.rescheduled(attempts, at));
    }

    void deadLetter(String id, int attempts, String reason) {
      QueuedEvent e = pending.remove(id);
      if (e != null) {
        dead.put(id, e.rescheduled(attempts, e.nextAttemptAt()));
        reasons.put(id, reason);
      }
    }

    void forget(String id) {
      if (!pending.containsKey(id)) {
        seen.remove(id);
      }
    }
  }
}

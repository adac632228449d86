package io.relaykit.tck;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalFullException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueuedEvent;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A {@link QueueJournal} wrapper that fails on demand, for fault-injection tests: the Nth call of
 * a kind, the next one, or every one until {@link #heal()}d. Each fault is one of three shapes:
 * <ul>
 *   <li>{@link Fault#BEFORE_WRITE}: the call throws a {@link JournalException} with outcome
 *       {@code NOT_RECORDED} without reaching the wrapped journal, as a journal that refuses
 *       before writing does;
 *   <li>{@link Fault#AFTER_WRITE}: the call reaches the wrapped journal, which records the change,
 *       and then throws with outcome {@code UNKNOWN}: a failed fsync, a commit whose
 *       acknowledgement was lost;
 *   <li>{@link Fault#FULL}: the call throws a {@link JournalFullException} without reaching the
 *       wrapped journal, as a journal whose buffer for its backend is full does.
 * </ul>
 * {@link #refuseEvents} makes appends of some events fail with an {@link IllegalArgumentException}
 * before writing, as a backend's size limit does. Calls are counted per {@link Call} kind from 1;
 * {@code append} and {@code appendDeferringSync} are both {@link Call#APPEND}. A fault on {@link
 * Call#AWAIT_DURABLE} models a failed sync: {@code BEFORE_WRITE} skips the wrapped journal's sync,
 * {@code AFTER_WRITE} runs it; both throw with outcome {@code UNKNOWN}, because the change was
 * recorded and only its durability is unproven.
 *
 * <p>Thread-safe; costs a lock and a map lookup per call. Not a backend: wrap a real one.
 */
public final class FaultyJournal implements QueueJournal {

  /** A kind of journal call, as faults are armed and calls counted. */
  public enum Call {
    /** {@link QueueJournal#append} and {@link QueueJournal#appendDeferringSync}. */
    APPEND,
    /** {@link QueueJournal#awaitDurable}: a fault here is a failed sync. */
    AWAIT_DURABLE,
    /** {@link QueueJournal#recordAtomically}: a fault fails the whole list. */
    RECORD_ATOMICALLY,
    /** {@link QueueJournal#remove}. */
    REMOVE,
    /** {@link QueueJournal#reschedule}. */
    RESCHEDULE,
    /** {@link QueueJournal#deadLetter}. */
    DEAD_LETTER,
    /** {@link QueueJournal#forget}. */
    FORGET,
    /** {@link QueueJournal#load}: any fault fails before the wrapped journal is loaded. */
    LOAD,
    /** {@link QueueJournal#flush}. */
    FLUSH
  }

  /** How an armed call fails. */
  public enum Fault {
    /** Throws before the wrapped journal is called: nothing recorded. */
    BEFORE_WRITE,
    /** Calls the wrapped journal, then throws: recorded, but reported as failed. */
    AFTER_WRITE,
    /** Throws a {@link JournalFullException} before the wrapped journal is called. */
    FULL
  }

  private final QueueJournal delegate;
  private final Map<Call, Long> counts = new EnumMap<>(Call.class);
  private final Map<Call, Map<Long, Fault>> armed = new EnumMap<>(Call.class);
  private final Map<Call, Fault> always = new EnumMap<>(Call.class);
  private Predicate<QueuedEvent> refused = e -> false;
  private long injected;
  /** Per call, the number of the call that is made on an interrupted thread. */
  private final Map<Call, Long> interruptOn = new EnumMap<>(Call.class);
  private long interruptsSwallowed;
  private volatile JournalState lastLoad;

  /**
   * Wraps {@code delegate}, failing nothing until a fault is armed.
   *
   * @param delegate the real journal every call that is not failed before writing reaches
   * @throws IllegalArgumentException if {@code delegate} is null
   */
  public FaultyJournal(QueueJournal delegate) {
    if (delegate == null) {
      throw new IllegalArgumentException("delegate must not be null");
    }
    this.delegate = delegate;
  }

  /**
   * The wrapped journal, to check what it really holds.
   *
   * @return the journal given to the constructor
   */
  public QueueJournal delegate() {
    return delegate;
  }

  /**
   * Makes the {@code nth} call of {@code call} (counted from 1 since this wrapper was built) fail
   * with {@code fault}, once. Arming the same {@code nth} again replaces its fault; an {@code nth}
   * already past never fires.
   *
   * @param call the kind of call
   * @param nth which call of that kind fails, from 1
   * @param fault how it fails
   * @return this wrapper, for chaining
   * @throws IllegalArgumentException if an argument is null or {@code nth} is below 1
   */
  public synchronized FaultyJournal failOn(Call call, long nth, Fault fault) {
    require(call, fault);
    if (nth < 1) {
      throw new IllegalArgumentException("nth must be >= 1, was " + nth);
    }
    armed.computeIfAbsent(call, c -> new HashMap<>()).put(nth, fault);
    return this;
  }

  /**
   * Makes the next call of {@code call} fail with {@code fault}, once.
   *
   * @param call the kind of call
   * @param fault how it fails
   * @return this wrapper, for chaining
   * @throws IllegalArgumentException if an argument is null
   */
  public synchronized FaultyJournal failNext(Call call, Fault fault) {
    return failOn(call, calls(call) + 1, fault);
  }

  /**
   * Makes every call of {@code call} fail with {@code fault} until {@link #heal()}; takes
   * precedence over a fault armed for one call.
   *
   * @param call the kind of call
   * @param fault how every such call fails
   * @return this wrapper, for chaining
   * @throws IllegalArgumentException if an argument is null
   */
  public synchronized FaultyJournal failAlways(Call call, Fault fault) {
    require(call, fault);
    always.put(call, fault);
    return this;
  }

  /**
   * Makes every append of an event matching {@code predicate} (alone, or in a {@link
   * #recordAtomically} list) throw an {@link IllegalArgumentException} before anything is
   * recorded, until {@link #heal()}: a backend's size limit. Replaces an earlier predicate.
   *
   * @param predicate which events to refuse; called under the wrapper's lock
   * @return this wrapper, for chaining
   * @throws IllegalArgumentException if {@code predicate} is null
   */
  public synchronized FaultyJournal refuseEvents(Predicate<QueuedEvent> predicate) {
    if (predicate == null) {
      throw new IllegalArgumentException("predicate must not be null");
    }
    this.refused = predicate;
    return this;
  }

  /**
   * Makes the next call of {@code call} run on an interrupted thread, once: the wrapper sets the
   * calling thread's interrupt flag, calls the wrapped journal (whose first blocking point, a
   * sync, a roll, a commit, a lock or a connection, sees it) and then clears the flag, as a caller
   * that handles its interrupt would, so that the rest of the caller's operation runs as usual.
   * A wrapped journal that cleared the flag itself (swallowed the interrupt) is counted in {@link
   * #interruptsSwallowed()}. Counts as an injected fault when the call is made.
   *
   * @param call the kind of call
   * @return this wrapper, for chaining
   * @throws IllegalArgumentException if {@code call} is null
   */
  public synchronized FaultyJournal interruptNext(Call call) {
    if (call == null) {
      throw new IllegalArgumentException("call must not be null");
    }
    interruptOn.put(call, calls(call) + 1);
    return this;
  }

  /**
   * How many calls made on an interrupted thread returned or threw with the thread's interrupt
   * flag cleared: a journal must leave it set.
   *
   * @return the count
   */
  public synchronized long interruptsSwallowed() {
    return interruptsSwallowed;
  }

  /** Whether this call (the count's latest) is to run interrupted; consumes the arming. */
  private synchronized boolean interruptNow(Call call) {
    Long at = interruptOn.get(call);
    if (at != null && at == calls(call)) {
      interruptOn.remove(call);
      injected++;
      return true;
    }
    return false;
  }

  private synchronized void swallowed() {
    interruptsSwallowed++;
  }

  /**
   * Disarms every fault and refusal. Call counts go on.
   *
   * @return this wrapper, for chaining
   */
  public synchronized FaultyJournal heal() {
    armed.clear();
    always.clear();
    interruptOn.clear();
    refused = e -> false;
    return this;
  }

  /**
   * How many calls of {@code call} were made so far, failed ones included.
   *
   * @param call the kind of call
   * @return the count, 0 before the first
   */
  public synchronized long calls(Call call) {
    return counts.getOrDefault(call, 0L);
  }

  /**
   * How many faults were injected so far.
   *
   * @return the count of calls failed by an armed fault (refused events not included)
   */
  public synchronized long injected() {
    return injected;
  }

  /** Counts a call of {@code call} and returns the fault it must suffer, or null. */
  private synchronized Fault arrive(Call call) {
    long n = counts.merge(call, 1L, Long::sum);
    Fault fault = always.get(call);
    Map<Long, Fault> byCall = armed.get(call);
    if (fault == null && byCall != null) {
      fault = byCall.remove(n);
    }
    if (fault != null) {
      injected++;
    }
    return fault;
  }

  private synchronized boolean refuses(QueuedEvent event) {
    return event != null && refused.test(event);
  }

  private static void require(Call call, Fault fault) {
    if (call == null || fault == null) {
      throw new IllegalArgumentException("call and fault must not be null");
    }
  }

  private RuntimeException before(Call call, Fault fault) {
    if (fault == Fault.FULL) {
      return new JournalFullException("injected fault: " + call + " #" + calls(call)
          + " found the journal full; nothing recorded");
    }
    return new JournalException("injected fault: " + call + " #" + calls(call)
        + " failed before writing", null, call == Call.AWAIT_DURABLE
            ? JournalException.Outcome.UNKNOWN : JournalException.Outcome.NOT_RECORDED);
  }

  private JournalException after(Call call) {
    return new JournalException("injected fault: " + call + " #" + calls(call)
        + " was written but reported as failed", null, JournalException.Outcome.UNKNOWN);
  }

  /** Runs {@code write} against the wrapped journal, failing as armed for {@code call}. */
  private <T> T call(Call call, java.util.function.Supplier<T> write) {
    Fault fault = arrive(call);
    boolean interrupt = interruptNow(call);
    if (fault != null && fault != Fault.AFTER_WRITE) {
      throw before(call, fault);
    }
    T result;
    if (interrupt) {
      Thread.currentThread().interrupt();
      try {
        result = write.get();
      } finally {
        if (!Thread.interrupted()) {
          swallowed();
        }
      }
    } else {
      result = write.get();
    }
    if (fault == Fault.AFTER_WRITE) {
      throw after(call);
    }
    return result;
  }

  private void refuseIfAsked(QueuedEvent event) {
    if (refuses(event)) {
      throw new IllegalArgumentException("event " + event.eventId()
          + " is refused by this journal (an injected size limit); nothing was recorded");
    }
  }

  @Override
  public void append(QueuedEvent event) {
    refuseIfAsked(event);
    call(Call.APPEND, () -> {
      delegate.append(event);
      return null;
    });
  }

  @Override
  public long appendDeferringSync(QueuedEvent event) {
    refuseIfAsked(event);
    return call(Call.APPEND, () -> delegate.appendDeferringSync(event));
  }

  @Override
  public void awaitDurable(long ticket) {
    call(Call.AWAIT_DURABLE, () -> {
      delegate.awaitDurable(ticket);
      return null;
    });
  }

  @Override
  public long recordAtomically(List<Change> changes) {
    if (changes != null) {
      for (Change c : changes) {
        if (c instanceof Change.Append a) {
          refuseIfAsked(a.event());
        }
      }
    }
    return call(Call.RECORD_ATOMICALLY, () -> delegate.recordAtomically(changes));
  }

  @Override
  public void remove(String eventId, Removal removal) {
    call(Call.REMOVE, () -> {
      delegate.remove(eventId, removal);
      return null;
    });
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    call(Call.RESCHEDULE, () -> {
      delegate.reschedule(eventId, attempts, nextAttemptAt);
      return null;
    });
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    call(Call.DEAD_LETTER, () -> {
      delegate.deadLetter(eventId, attempts, reason);
      return null;
    });
  }

  @Override
  public void forget(String eventId) {
    call(Call.FORGET, () -> {
      delegate.forget(eventId);
      return null;
    });
  }

  /** A fault on load never reaches the wrapped journal (it may be loaded only once). */
  @Override
  public JournalState load() {
    Fault fault = arrive(Call.LOAD);
    if (fault != null) {
      throw before(Call.LOAD, fault == Fault.AFTER_WRITE ? Fault.BEFORE_WRITE : fault);
    }
    JournalState state = delegate.load();
    lastLoad = state;
    return state;
  }

  /**
   * What the last successful {@link #load()} returned.
   *
   * @return the last loaded state, or null before a load succeeded
   */
  public JournalState lastLoad() {
    return lastLoad;
  }

  @Override
  public void flush() {
    call(Call.FLUSH, () -> {
      delegate.flush();
      return null;
    });
  }

  /** Closes the wrapped journal; never fails on purpose. */
  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return "FaultyJournal[" + delegate + "]";
  }
}

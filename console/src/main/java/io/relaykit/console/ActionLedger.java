package io.relaykit.console;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The console's record of actions: an id is issued when a form renders (with what the action will
 * do), marked running before the action starts, and keeps its outcome when it ends, so a repeated
 * request with the same id (a double click, a retried request) never runs it again and is shown
 * the first outcome.
 *
 * <p>Bounded: at most {@code capacity} entries. Issuing past it evicts the oldest entry that is
 * not running (counted); when every entry is running, issuing fails with {@link
 * IllegalStateException}. An evicted or unknown id is refused, never run: the price of the bound is
 * that an old form must be reloaded, never that an action runs twice. In memory: a restart forgets
 * every id, and their forms are refused. Thread-safe; every operation is O(1) amortized.
 */
final class ActionLedger {

  /** Where an action stands. */
  enum State { ISSUED, RUNNING, DONE }

  /** What a begin found. */
  enum Begin { RUN, RUNNING, DONE, UNKNOWN }

  /**
   * What an action did.
   *
   * @param ok whether it did all it was asked
   * @param count how many dead letters it changed
   * @param summary one line for the operator
   */
  record Outcome(boolean ok, long count, String summary) {}

  /** One entry. Mutable under the ledger's lock. */
  static final class Entry {
    final String id;
    final ConsoleAction action;
    final String issuedTo;
    final Instant issuedAt;
    State state = State.ISSUED;
    Outcome outcome;
    String ranBy;

    Entry(String id, ConsoleAction action, String issuedTo, Instant issuedAt) {
      this.id = id;
      this.action = action;
      this.issuedTo = issuedTo;
      this.issuedAt = issuedAt;
    }
  }

  private static final SecureRandom RANDOM = new SecureRandom();

  private final int capacity;
  private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>();
  private long evicted;

  ActionLedger(int capacity) {
    if (capacity < 1 || capacity > 1_000_000) {
      throw new IllegalArgumentException("ledger capacity must be in 1..1000000, was "
          + capacity);
    }
    this.capacity = capacity;
  }

  /**
   * Issues an id for {@code action}.
   *
   * @throws IllegalStateException when the ledger is full of running actions
   */
  synchronized Entry issue(ConsoleAction action, String principal, Instant now) {
    Objects.requireNonNull(action, "action");
    if (entries.size() >= capacity) {
      Iterator<Entry> it = entries.values().iterator();
      while (it.hasNext() && entries.size() >= capacity) {
        if (it.next().state != State.RUNNING) {
          it.remove();
          evicted++;
        }
      }
      if (entries.size() >= capacity) {
        throw new IllegalStateException("the console's action ledger is full: " + capacity
            + " actions are running; try again when one ends");
      }
    }
    byte[] bytes = new byte[16];
    RANDOM.nextBytes(bytes);
    Entry e = new Entry(HexFormat.of().formatHex(bytes), action, principal, now);
    entries.put(e.id, e);
    return e;
  }

  /** The entry of {@code id}, or null. */
  synchronized Entry find(String id) {
    return entries.get(id);
  }

  /**
   * Marks {@code id} running if it was only issued: the caller then runs it and must call {@link
   * #finish}. Any other answer means the caller must not run it.
   */
  synchronized Begin begin(String id, String principal) {
    Entry e = entries.get(id);
    if (e == null) {
      return Begin.UNKNOWN;
    }
    return switch (e.state) {
      case ISSUED -> {
        e.state = State.RUNNING;
        e.ranBy = principal;
        yield Begin.RUN;
      }
      case RUNNING -> Begin.RUNNING;
      case DONE -> Begin.DONE;
    };
  }

  /** Records the outcome of a running action and wakes those waiting for it. */
  synchronized void finish(String id, Outcome outcome) {
    Entry e = entries.get(id);
    if (e != null) {
      e.outcome = Objects.requireNonNull(outcome, "outcome");
      e.state = State.DONE;
    }
    notifyAll();
  }

  /**
   * Waits up to {@code timeout} for {@code id} to be done.
   *
   * @return its outcome, or null if it is still running (or unknown)
   * @throws InterruptedException if interrupted while waiting
   */
  synchronized Outcome await(String id, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Entry e = entries.get(id);
      if (e == null) {
        return null;
      }
      if (e.state == State.DONE) {
        return e.outcome;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      wait(Math.max(1, left / 1_000_000));
    }
  }

  synchronized int size() {
    return entries.size();
  }

  synchronized long evicted() {
    return evicted;
  }

  int capacity() {
    return capacity;
  }

  /** A copy of the entries' states, oldest first (for tests and diagnostics). */
  synchronized Map<String, State> states() {
    Map<String, State> m = new LinkedHashMap<>();
    entries.forEach((k, v) -> m.put(k, v.state));
    return m;
  }
}

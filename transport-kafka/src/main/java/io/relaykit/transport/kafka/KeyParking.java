package io.relaykit.transport.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Holds back the later records of a key (or partition, in PARTITION mode) while one of its records
 * waits in the retry topic, so retries keep per-key order without blocking the partition.
 *
 * <p>A key is parked while it has at least one hold: first the failed {@link Work} itself, until
 * its hand-off to the retry topic is confirmed, then the retry record's position, until that record
 * finishes (succeeds, is dead-lettered, or is handed to the retry topic again under a new hold).
 * Records that meet a parked key wait here, ordered by partition and offset, and are released in
 * that order when the last hold goes. Admission of a parked key's record and release happen under
 * one lock with the submission to the keyed lanes, so a record released from here can never be
 * overtaken by a later record of its key.
 *
 * <p>Cost: O(log w) per parked record, w the records waiting on that key; memory is bounded by the
 * subscription's in-flight limit, since waiting records stay in flight. A record of a key that is
 * not parked takes no lock, in {@link #admit} or {@link #parkIfHeld}, even while other keys are
 * parked: a lock that every worker takes for every record queues all of them behind one holder
 * that the scheduler has descheduled, and the healthy keys lose the throughput a failing key
 * should never cost them.
 *
 * <p>WARNING: that lock-free path keeps order only while a key is parked ({@link #hold}, {@link
 * #holdIf}) by a task running in that key's lane, before the task ends (or by another thread the
 * task waits for, as a handler timeout's expiry), or by the thread that calls {@link #admit}: then
 * a record admitted just before the park is queued in the lane behind that task and meets the park
 * in {@link #parkIfHeld}. A park placed from anywhere else (a free-running timer, a producer
 * callback) could let such a record run beside or ahead of the parked ones. Releases may come from
 * any thread.
 */
final class KeyParking {

  /** Retry positions remembered per park as finished before their hold was placed. */
  static final int MAX_FINISHED_EARLY = 64;

  private static final class Park {
    final Set<Object> holds = new HashSet<>();
    final PriorityQueue<Work> waiting = new PriorityQueue<>(Work.ORDER);
    /**
     * Retry holds released before they were placed: the consumer fetched and finished a retry copy
     * before the producer callback that moves the key's hold onto that copy ran.
     */
    final Set<Object> finishedEarly = new HashSet<>();
    /** Released: a drain task takes the waiting records; the key stays parked until it is done. */
    boolean draining;
  }

  /**
   * The parked keys. Changed only under this object's lock, and so are the {@link Park}s in it;
   * read without the lock only to ask whether a key is parked ({@link #admit}, {@link
   * #parkIfHeld}), a question a concurrent map answers atomically.
   */
  private final Map<Object, Park> parks = new ConcurrentHashMap<>();
  /** Written under the lock; read without it by {@link #waiting} (the poll thread's room check). */
  private volatile int waitingCount;

  /**
   * Runs {@code submit} for {@code work} now if its key is not parked, else queues it. For a parked
   * key both happen under this object's lock, so submissions keep the order of admissions and
   * releases; a key that is not parked has no released record left to overtake (its park goes only
   * once the last was taken), so its record is submitted without the lock. A key parked just after
   * that check is parked by a record that runs before this one in the key's lane, where {@link
   * #parkIfHeld} finds the park.
   *
   * @return true if submitted, false if parked
   * @throws NullPointerException if {@code work} has no gate key
   */
  boolean admit(Work work, Consumer<Work> submit) {
    if (!parks.containsKey(work.gateKey())) {
      submit.accept(work);
      return true;
    }
    return admitLocked(work, submit);
  }

  private synchronized boolean admitLocked(Work work, Consumer<Work> submit) {
    Park park = parks.get(work.gateKey());
    if (park != null) {
      park.waiting.add(work);
      waitingCount++;
      return false;
    }
    submit.accept(work);
    return true;
  }

  /**
   * Whether {@code work}'s key is parked; if so queues it (it was submitted before the park). Takes
   * the lock only when the key is parked: a key is parked by the record of that key that runs
   * before (its failure holds the key before its task ends, and the lane orders the two tasks), or
   * by the poll thread at an assignment, so the lock-free read sees that hold.
   *
   * @throws NullPointerException if {@code work} has no gate key
   */
  boolean parkIfHeld(Work work) {
    return parks.containsKey(work.gateKey()) && parkIfHeldLocked(work);
  }

  private synchronized boolean parkIfHeldLocked(Work work) {
    Park park = parks.get(work.gateKey());
    if (park == null) {
      return false;
    }
    park.waiting.add(work);
    waitingCount++;
    return true;
  }

  /**
   * Parks {@code key} under {@code hold} if {@code valid} still holds, checked under this object's
   * lock: a {@link #revoke} that runs after the check drops the hold, one that ran before makes the
   * check fail (revokes mark their work stale before they take the lock). Only from a task in
   * the key's lane, before it ends (a handler timeout's expiry counts: the lane's task waits for
   * it), or the thread that calls {@link #admit} (see the class comment).
   *
   * @return whether the hold was placed
   */
  synchronized boolean holdIf(Object key, Object hold, java.util.function.BooleanSupplier valid) {
    if (!valid.getAsBoolean()) {
      return false;
    }
    hold(key, hold);
    return true;
  }

  /**
   * Whether a record matching {@code which} waits for a parked key (or is released and about to
   * run). O(waiting records): for the transactional hand-off's commit tick, not the hot path.
   */
  synchronized boolean anyWaiting(Predicate<Work> which) {
    for (Park park : parks.values()) {
      for (Work w : park.waiting) {
        if (which.test(w)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Parks {@code key} under {@code hold} (a failed work, or a retry record's position). Only from
   * a task in the key's lane or the thread that calls {@link #admit} (see the class comment).
   */
  synchronized void hold(Object key, Object hold) {
    parks.computeIfAbsent(key, k -> new Park()).holds.add(hold);
  }

  /**
   * Moves {@code key}'s hold from {@code oldHold} (a failed work) to {@code newHold} (its retry
   * copy's position), without unparking in between, if {@code live} says this member will see that
   * copy finish (it owns the copy's partition; checked under the lock, so a revoke of that
   * partition either runs later and drops the new hold, or ran before and fails the check).
   * Otherwise, and if the copy already finished ({@link #releaseRetry} came first), the key is
   * released: no hold is placed that nobody would release.
   */
  synchronized void moveHold(Object key, Object oldHold, Object newHold,
      java.util.function.BooleanSupplier live, Consumer<Object> drain) {
    Park park = parks.get(key);
    if (park == null || !park.holds.contains(oldHold)) {
      return; // released meanwhile by a revoke: the new owner decides order from here
    }
    if (park.finishedEarly.remove(newHold) || !live.getAsBoolean()) {
      release(key, oldHold, drain);
      return;
    }
    park.holds.remove(oldHold);
    park.holds.add(newHold);
  }

  /**
   * Releases {@code hold}, a retry copy's position, when that copy finished. If the key is parked
   * but the hold is not there yet (its move is still to come, see {@link #moveHold}), remembers it,
   * at most {@value #MAX_FINISHED_EARLY} per park; they go with the park.
   */
  synchronized void releaseRetry(Object key, Object hold, Consumer<Object> drain) {
    Park park = parks.get(key);
    if (park == null) {
      return;
    }
    if (park.holds.contains(hold)) {
      release(key, hold, drain);
    } else if (park.finishedEarly.size() < MAX_FINISHED_EARLY) {
      park.finishedEarly.add(hold);
    }
  }

  /**
   * Drops {@code hold}; if it was the key's last, releases the key's waiting records: they are run
   * in order by one drain task in the key's lane ({@link #nextReleased}), started through {@code
   * drain}; until the last has been taken the key counts as parked, so a record of the key that was
   * already queued in the lane cannot overtake them.
   */
  synchronized void release(Object key, Object hold, Consumer<Object> drain) {
    Park park = parks.get(key);
    if (park == null || !park.holds.remove(hold)) {
      return;
    }
    if (park.holds.isEmpty()) {
      flush(key, park, drain);
    }
  }

  /**
   * Drops every hold {@code revokedHold} matches and every waiting record {@code revokedWork}
   * matches (their partitions moved to another consumer, which re-reads them); keys left without
   * holds release their remaining records as {@link #release} does.
   *
   * @return the dropped waiting records
   */
  synchronized List<Work> revoke(Predicate<Object> revokedHold, Predicate<Work> revokedWork,
      Consumer<Object> drain) {
    List<Work> dropped = new ArrayList<>();
    List<Map.Entry<Object, Park>> unparked = new ArrayList<>();
    for (Map.Entry<Object, Park> e : parks.entrySet()) {
      Park park = e.getValue();
      park.holds.removeIf(revokedHold);
      park.waiting.removeIf(w -> {
        if (revokedWork.test(w)) {
          dropped.add(w);
          return true;
        }
        return false;
      });
      if (park.holds.isEmpty()) {
        unparked.add(e);
      }
    }
    waitingCount -= dropped.size();
    for (Map.Entry<Object, Park> e : unparked) {
      flush(e.getKey(), e.getValue(), drain);
    }
    return dropped;
  }

  /** A park without holds: forgotten if nothing waits, else drained once, in the key's lane. */
  private void flush(Object key, Park park, Consumer<Object> drain) {
    if (park.waiting.isEmpty()) {
      parks.remove(key);
    } else if (!park.draining) {
      park.draining = true;
      drain.accept(key);
    }
  }

  /**
   * The next released record of {@code key} for its drain task to run, lowest position first; null
   * when the drain is over: nothing left (the key is unparked) or the key was held again (a record
   * of the drain failed; the next release starts a new drain).
   */
  synchronized Work nextReleased(Object key) {
    Park park = parks.get(key);
    if (park == null) {
      return null;
    }
    if (!park.holds.isEmpty()) {
      park.draining = false;
      return null;
    }
    Work next = park.waiting.poll();
    if (next == null) {
      parks.remove(key);
      return null;
    }
    waitingCount--;
    return next;
  }

  /**
   * The holds of every parked key that has a waiting record {@code waitingIn} matches or a hold
   * {@code holdIn} matches, by key: what a hand-over names for the next owner. O(parked records).
   */
  synchronized Map<Object, List<Object>> holdsOf(Predicate<Work> waitingIn,
      Predicate<Object> holdIn) {
    Map<Object, List<Object>> out = new HashMap<>();
    for (Map.Entry<Object, Park> e : parks.entrySet()) {
      Park park = e.getValue();
      if (park.holds.isEmpty()) {
        continue; // draining: released already
      }
      if (park.holds.stream().anyMatch(holdIn) || park.waiting.stream().anyMatch(waitingIn)) {
        out.put(e.getKey(), new ArrayList<>(park.holds));
      }
    }
    return out;
  }

  /** Records waiting for a parked key that {@code which} matches. O(waiting records). */
  synchronized int waiting(Predicate<Work> which) {
    int n = 0;
    for (Park park : parks.values()) {
      for (Work w : park.waiting) {
        if (which.test(w)) {
          n++;
        }
      }
    }
    return n;
  }

  /** Records waiting for a parked key. Lock-free. */
  int waiting() {
    return waitingCount;
  }

  /** Keys parked now. */
  synchronized int parkedKeys() {
    return parks.size();
  }
}

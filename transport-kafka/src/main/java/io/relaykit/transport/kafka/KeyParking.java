package io.relaykit.transport.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
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
 * that order when the last hold goes. Admission and release happen under one lock with the
 * submission to the keyed lanes, so a record released from here can never be overtaken by a later
 * record of its key.
 *
 * <p>Cost: O(log w) per parked record, w the records waiting on that key; memory is bounded by the
 * subscription's in-flight limit, since waiting records stay in flight.
 */
final class KeyParking {

  private static final class Park {
    final Set<Object> holds = new HashSet<>();
    final PriorityQueue<Work> waiting = new PriorityQueue<>(Work.ORDER);
  }

  private final Map<Object, Park> parks = new HashMap<>();
  /** Written under the lock; read without it by {@link #waiting} (the poll thread's room check). */
  private volatile int waitingCount;
  /**
   * {@code parks.size()}, written under the lock after every change (after the flush, on release),
   * read without it by {@link #parkIfHeld}: a key is parked by the record of that key that runs
   * before (its failure holds the key before its task ends), so the read sees that hold.
   */
  private volatile int parkedCount;

  /**
   * Runs {@code submit} for {@code work} now if its key is not parked, else queues it. Both happen
   * under this object's lock, so submissions keep the order of admissions and releases.
   *
   * @return true if submitted, false if parked
   */
  synchronized boolean admit(Work work, Consumer<Work> submit) {
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
   * no lock while no key is parked, which is the common case.
   */
  boolean parkIfHeld(Work work) {
    return parkedCount != 0 && parkIfHeldLocked(work);
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
   * check fail (revokes mark their work stale before they take the lock).
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

  /** Parks {@code key} under {@code hold} (a failed work, or a retry record's position). */
  synchronized void hold(Object key, Object hold) {
    parks.computeIfAbsent(key, k -> new Park()).holds.add(hold);
    parkedCount = parks.size();
  }

  /** Swaps one hold for another without unparking in between. */
  synchronized void replace(Object key, Object oldHold, Object newHold) {
    Park park = parks.get(key);
    if (park == null || !park.holds.remove(oldHold)) {
      return; // released meanwhile by a revoke: the new owner decides order from here
    }
    park.holds.add(newHold);
  }

  /**
   * Drops {@code hold}; if it was the key's last, unparks the key and submits its waiting records in
   * order.
   */
  synchronized void release(Object key, Object hold, Consumer<Work> submit) {
    Park park = parks.get(key);
    if (park == null || !park.holds.remove(hold)) {
      return;
    }
    if (park.holds.isEmpty()) {
      parks.remove(key);
      flush(park, submit);
      parkedCount = parks.size();
    }
  }

  /**
   * Drops every hold {@code revokedHold} matches and every waiting record {@code revokedWork}
   * matches (their partitions moved to another consumer, which re-reads them); keys left without
   * holds are unparked and their remaining records submitted.
   *
   * @return the dropped waiting records
   */
  synchronized List<Work> revoke(Predicate<Object> revokedHold, Predicate<Work> revokedWork,
      Consumer<Work> submit) {
    List<Work> dropped = new ArrayList<>();
    Iterator<Map.Entry<Object, Park>> it = parks.entrySet().iterator();
    List<Park> unparked = new ArrayList<>();
    while (it.hasNext()) {
      Park park = it.next().getValue();
      park.holds.removeIf(revokedHold);
      park.waiting.removeIf(w -> {
        if (revokedWork.test(w)) {
          dropped.add(w);
          return true;
        }
        return false;
      });
      if (park.holds.isEmpty()) {
        it.remove();
        unparked.add(park);
      }
    }
    waitingCount -= dropped.size();
    for (Park park : unparked) {
      flush(park, submit);
    }
    parkedCount = parks.size();
    return dropped;
  }

  private void flush(Park park, Consumer<Work> submit) {
    while (!park.waiting.isEmpty()) {
      waitingCount--;
      submit.accept(park.waiting.poll());
    }
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

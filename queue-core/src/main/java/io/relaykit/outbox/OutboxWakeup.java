package io.relaykit.outbox;

import io.relaykit.internal.Checks;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A wake signal from the code that commits outbox rows to the relays of the same JVM: {@link
 * #wake()} says "rows were committed, claim now", and every {@link OutboxRelay} {@link
 * #subscribe subscribed} ends its idle wait at once and runs a claim, instead of waiting out its
 * poll interval. Nothing else changes: the rows are still claimed through the {@link OutboxStore}
 * (leases, per-key order and fencing as before), and the poll stays the safety net, so a wake that
 * is lost or never sent costs at most one poll interval.
 *
 * <p>Who fires it: a store fires its own {@link OutboxStore#wakeup()} where it knows a row
 * committed (the JDBC store after an append on an auto-commit connection, the in-memory store
 * after every append); code that appends in its own transaction calls {@link
 * OutboxStore#committed()} after the commit (the Spring starter does that in {@code afterCommit},
 * never on rollback). A wake before the commit is harmless (the claim finds nothing and the relay
 * waits again) but gains nothing.
 *
 * <p>Cost: {@link #wake()} never blocks and never touches a database: per subscriber one volatile
 * read and write, and a lock-and-signal only when the relay is idle and not already woken, so many
 * wakes between two claims cost one claim (coalesced). A relay woken during a cycle starts its
 * next cycle without the idle pause. Wakes never end a relay's back-off after failed cycles, so a
 * failing store is not claimed once per commit.
 *
 * <p>Bounded: at most {@value #MAX_SUBSCRIBERS} subscribers. A wake reaches relays of this JVM
 * only; relays in other processes learn of rows through a channel of the store's (LISTEN/NOTIFY
 * on PostgreSQL, see the JDBC store) or by their poll. Thread-safe.
 */
public final class OutboxWakeup {

  /** The most subscribers one wakeup takes. */
  public static final int MAX_SUBSCRIBERS = 1_024;

  /**
   * Told when the first subscriber arrives and when the last one leaves, under the wakeup's
   * lock: a store starts and stops a listener for other processes' wakes with it.
   */
  public interface Demand {
    /** The first subscriber arrived: start listening. Must not block. */
    void started();

    /** The last subscriber left: stop listening. Must not block. */
    void stopped();
  }

  /** A subscription; {@link #close()} ends it. Idempotent. */
  public interface Subscription extends AutoCloseable {
    @Override
    void close();
  }

  private static final Demand NO_DEMAND = new Demand() {
    @Override
    public void started() {}

    @Override
    public void stopped() {}
  };

  private final CopyOnWriteArrayList<Runnable> subscribers = new CopyOnWriteArrayList<>();
  private final Demand demand;
  private final AtomicLong wakes = new AtomicLong();

  private OutboxWakeup(Demand demand) {
    this.demand = demand;
  }

  /**
   * A wakeup for relays of this JVM only.
   *
   * @return a new wakeup without subscribers
   */
  public static OutboxWakeup create() {
    return new OutboxWakeup(NO_DEMAND);
  }

  /**
   * A wakeup that tells {@code demand} when it gains its first subscriber and loses its last.
   *
   * @param demand what to tell; not null
   * @return a new wakeup without subscribers
   * @throws IllegalArgumentException if {@code demand} is null
   */
  public static OutboxWakeup create(Demand demand) {
    return new OutboxWakeup(Checks.requireNonNull("demand", demand));
  }

  /**
   * Wakes every subscriber: rows were committed. Never blocks, never throws (a subscriber that
   * throws is skipped).
   */
  public void wake() {
    wakes.incrementAndGet();
    for (Runnable s : subscribers) {
      try {
        s.run();
      } catch (RuntimeException e) {
        // A subscriber is a relay's flag and signal: it does not throw. Never fail a commit.
      }
    }
  }

  /**
   * Subscribes {@code onWake}, run on the waking thread by every {@link #wake()} until the
   * subscription is closed: it must be fast and must not block (a relay sets a flag and signals).
   *
   * @param onWake what a wake runs; not null
   * @return the subscription; close it to unsubscribe
   * @throws IllegalArgumentException if {@code onWake} is null
   * @throws IllegalStateException if {@value #MAX_SUBSCRIBERS} subscribers are subscribed
   * @throws RuntimeException what the demand's {@link Demand#started()} threw for the first
   *     subscriber (for example no thread for a listener); nothing is subscribed then
   */
  public Subscription subscribe(Runnable onWake) {
    Checks.requireNonNull("onWake", onWake);
    Runnable entry = onWake::run; // a distinct identity per subscription
    synchronized (subscribers) {
      if (subscribers.size() >= MAX_SUBSCRIBERS) {
        throw new IllegalStateException("outbox wakeup has " + MAX_SUBSCRIBERS
            + " subscribers, its bound: close relays that are no longer used");
      }
      subscribers.add(entry);
      if (subscribers.size() == 1) {
        try {
          demand.started();
        } catch (RuntimeException | Error e) {
          subscribers.remove(entry); // no subscription to close: leave none behind
          throw e;
        }
      }
    }
    return new Subscription() {
      private boolean closed;

      @Override
      public void close() {
        synchronized (subscribers) {
          if (closed) {
            return;
          }
          closed = true;
          subscribers.remove(entry);
          if (subscribers.isEmpty()) {
            demand.stopped();
          }
        }
      }
    };
  }

  /**
   * The subscribers now.
   *
   * @return how many relays (or others) are subscribed
   */
  public int subscribers() {
    return subscribers.size();
  }

  /**
   * The wakes so far.
   *
   * @return how many times {@link #wake()} was called since this wakeup was created
   */
  public long wakes() {
    return wakes.get();
  }
}

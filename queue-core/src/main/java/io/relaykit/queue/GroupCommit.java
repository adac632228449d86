package io.relaykit.queue;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The durable position of a {@link FileJournal} and the fsyncs that move it: concurrent critical
 * appenders share fsyncs, and a failed fsync fails the journal closed.
 *
 * <p>Positions: the journal counts every byte handed to it ({@code appended}); {@code durable} is
 * the count known to be fsynced. A critical append waits until {@code durable} reaches its
 * ticket. Only the journal's own I/O thread syncs: it drains the journal's buffer to the channel
 * under the journal's write lock ({@link Source#drain}) and calls {@code force} outside it, so
 * writers keep going during the fsync. Callers wait for a position ({@link #awaitDurable}) and
 * never touch a channel: a {@code FileChannel} closes itself when a thread doing I/O on it is
 * interrupted, so an interrupted caller's wait ends, and nothing else.
 *
 * <p>Fail closed: after a {@code force} throws, the kernel may have dropped the dirty pages it
 * could not write (Linux reports a write-back error once), so a later {@code force} that succeeds
 * proves nothing about the earlier records. The journal is then {@linkplain #failure failed}: every
 * waiter whose records were not yet durable, and every later change, gets a {@link
 * JournalException} until the journal is closed and reopened, which recovers what is on disk. A
 * failure to <em>write</em> the buffer (a full disk) is not a failed fsync: the buffer is kept and
 * written again by the next sync; only the waiters of that sync see the error.
 */
final class GroupCommit {

  /** The journal side of a sync. */
  interface Source {
    /**
     * Under the journal's write lock: writes what is buffered to the active segment (no fsync)
     * and returns the channel to force and the position that forcing it covers.
     *
     * @throws JournalException when the buffer cannot be written (it is kept) or the journal is
     *     closed or failed
     */
    Pending drain();
  }

  /**
   * What a sync forces: {@code channel} (null when there is no active segment: everything
   * drained is in sealed, fsynced segments) makes {@code covered} durable.
   */
  record Pending(FileChannel channel, Path segment, long covered) {
  }

  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());
  private static final long MAX_GATHER_NANOS = 1_000_000;

  private final Path dir;
  private final Source source;
  private final ReentrantLock lock = new ReentrantLock();
  /** Signalled when a sync ends (or the journal stops or fails). */
  private final Condition syncDone = lock.newCondition();
  /** Signalled when enough critical appenders arrived for the sync that is gathering them. */
  private final Condition arrived = lock.newCondition();
  private volatile JournalException failure;
  private volatile boolean stopped;
  private long durable;
  /** Signalled when a caller wants a sync or wakes the I/O thread. */
  private final Condition work = lock.newCondition();
  /** The highest position a caller waits for. */
  private long requested;
  private boolean woken;
  /** Numbers the syncs the I/O thread started; a waiter fails with a drain of a later one. */
  private long syncRounds;
  private long failedRound;
  private JournalException syncError;
  /** Written under lock, read without it (a counter for tests and benchmarks). */
  private volatile long syncs;
  /** The targets of the critical appenders in syncUpTo, in waiterCount slots. */
  private long[] waiterTargets = new long[8];
  private int waiterCount;
  /** Critical appenders whose record is not yet durable (target > durable). */
  private int pending;
  /** The most pending at once since the last critical sync started. */
  private int roundPeak;
  /** The previous round's peak: how many the next critical sync waits for, briefly. */
  private int expected;
  /** Recent force(false) durations, an exponential moving average. */
  private long forceNanos;
  /** Channels of sealed segments, closed once no sync can still be forcing them. */
  private final List<FileChannel> retired = new ArrayList<>();

  GroupCommit(Path dir, Source source) {
    this.dir = dir;
    this.source = source;
  }

  /** Sets the durable position after recovery: everything recovered is on disk. */
  void recovered(long position) {
    lock.lock();
    try {
      durable = position;
    } finally {
      lock.unlock();
    }
  }

  /** The failure that closed the journal, or null. */
  JournalException failure() {
    return failure;
  }

  /** Throws the failure that closed the journal, if any. */
  void checkNotFailed() {
    JournalException f = failure;
    if (f != null) {
      throw new JournalException(f.getMessage(), f.getCause());
    }
  }

  /**
   * Fails the journal closed after an fsync (or a write whose outcome is unknown) of {@code
   * segment} threw; returns the exception for the caller to throw.
   */
  JournalException fail(Path segment, IOException cause) {
    String what = cause instanceof ClosedChannelException
        // ClosedByInterruptException included: the JDK closes a FileChannel whose thread is
        // interrupted during I/O, and reports the interrupt instead of any error of the fsync
        // itself (a write-back error would be hidden), so nothing written since the last good
        // fsync is known to be on disk.
        ? "the journal's own I/O thread was interrupted (or its channel closed) while it wrote"
            + " or fsynced " + segment + " (" + cause + "); the channel closed itself, and an"
            + " interrupted fsync may hide a write-back error"
        : "an fsync of " + segment + " failed (" + cause + ")";
    JournalException f = new JournalException("journal " + dir + " failed: " + what + ", so"
        + " changes recorded since the last good one may not be on disk; it refuses every change"
        + " until it is closed and reopened (a reopen recovers what is durable)", cause);
    lock.lock();
    try {
      if (failure == null) {
        failure = f;
        LOG.log(System.Logger.Level.ERROR, f.getMessage(), cause);
      }
      syncDone.signalAll();
      arrived.signalAll();
      work.signalAll();
      return failure;
    } finally {
      lock.unlock();
    }
  }

  /** A sealed segment's channel; closed after the syncs that may still force it. */
  void retire(FileChannel channel) {
    lock.lock();
    try {
      retired.add(channel);
    } finally {
      lock.unlock();
    }
  }

  /** Records that everything up to {@code to} is durable (a segment roll forced it). */
  void advance(long to) {
    lock.lock();
    try {
      advanceDurable(to);
      syncDone.signalAll();
    } finally {
      lock.unlock();
    }
  }

  long syncs() {
    return syncs;
  }

  /** The position known to be fsynced. */
  long durable() {
    lock.lock();
    try {
      return durable;
    } finally {
      lock.unlock();
    }
  }

  /** Wakes every waiter and closes the retired channels: the journal is closing. */
  void stop() {
    List<FileChannel> toClose;
    lock.lock();
    try {
      stopped = true;
      toClose = new ArrayList<>(retired);
      retired.clear();
      syncDone.signalAll();
      arrived.signalAll();
      work.signalAll();
    } finally {
      lock.unlock();
    }
    toClose.forEach(FileJournal::closeQuietly);
  }

  /**
   * Waits until every byte up to {@code target} is fsynced by the journal's I/O thread, which
   * this call wakes: the caller's thread never touches a channel, so an interrupt cannot close
   * one. {@code critical} callers (CRITICAL appenders, one record outstanding each) are counted,
   * so that the I/O thread can gather them into one fsync ({@link #syncUpTo}).
   *
   * @throws JournalException with {@link JournalException.Outcome#UNKNOWN} when the journal
   *     failed or stopped before {@code target} was durable, a sync that covered this caller's
   *     records could not write them (they stay buffered for the next sync), or the caller was
   *     interrupted: the wait ends at once and the interrupt flag stays set
   */
  void awaitDurable(long target, boolean critical) {
    lock.lock();
    try {
      if (durable >= target) {
        return;
      }
      boolean registered = critical;
      long seen = syncRounds;
      if (registered) {
        addWaiter(target);
        pending++;
        roundPeak = Math.max(roundPeak, pending);
        if (pending >= expected) {
          arrived.signal();
        }
      }
      requested = Math.max(requested, target);
      work.signal();
      try {
        while (durable < target) {
          checkNotFailed();
          if (stopped) {
            throw new JournalException("journal " + dir + " closed before the change was"
                + " durable", null, JournalException.Outcome.UNKNOWN);
          }
          if (failedRound > seen) {
            throw new JournalException(syncError.getMessage(), syncError,
                JournalException.Outcome.UNKNOWN);
          }
          try {
            syncDone.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JournalException("interrupted while waiting for journal " + dir + " to"
                + " sync: the change is recorded, and the journal's own thread makes it durable"
                + " with its next sync unless the process stops first", e,
                JournalException.Outcome.UNKNOWN);
          }
        }
      } finally {
        if (registered) {
          removeWaiter(target);
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /** Wakes the I/O thread for a round now (records are waiting, or a roll is wanted). */
  void wake() {
    lock.lock();
    try {
      woken = true;
      work.signal();
    } finally {
      lock.unlock();
    }
  }

  /**
   * The I/O thread waits here for work: a caller waiting for durability, a {@link #wake}, the
   * end of {@code nanos}, or a stop. Returns whether a caller waits for a sync. Interrupts of
   * the I/O thread are ignored here (nobody should send one): the channels stay usable.
   */
  boolean awaitWork(long nanos) {
    lock.lock();
    try {
      // After a failure nothing can be synced: waiters are woken by fail(), not served here.
      while (!stopped && !woken && (requested <= durable || failure != null) && nanos > 0) {
        try {
          nanos = work.awaitNanos(nanos);
        } catch (InterruptedException e) {
          // The journal's own thread: an interrupt must not close its channels; keep working.
          Thread.interrupted();
        }
      }
      woken = false;
      return requested > durable && failure == null;
    } finally {
      lock.unlock();
    }
  }

  /** Whether critical appenders wait for a sync (a sync should gather them). */
  boolean criticalWaiting() {
    lock.lock();
    try {
      return pending > 0;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Syncs every byte up to {@code target}, and everything written before the drain: called by
   * the journal's I/O thread only (the only thread that writes or forces the active segment).
   * When critical appenders wait ({@code critical}), it first waits until as many are waiting as
   * were waiting at once in the previous round, or at most half a recent sync's duration (at
   * most 1 ms): a producer waiting for its own record has one record outstanding, so with N of
   * them one sync covers at most N records, and only if it starts after all N appended; syncing
   * at once would split them into two alternating halves. A lone producer never waits.
   *
   * @throws JournalException when the journal failed, or the drain or force failed (a failed
   *     force fails the journal closed; a failed drain keeps the buffer, and the callers waiting
   *     for this round see the error)
   */
  void syncUpTo(long target, boolean critical) {
    List<FileChannel> toClose = null;
    lock.lock();
    try {
      if (durable >= target) {
        return;
      }
      checkNotFailed();
      if (critical) {
        gather();
        expected = roundPeak;
        roundPeak = 0;
      }
      long round = ++syncRounds;
      Pending p = null;
      long forced = -1;
      lock.unlock();
      try {
        p = source.drain();
        long start = System.nanoTime();
        if (p.channel() != null) {
          p.channel().force(false);
        }
        forced = System.nanoTime() - start;
      } catch (IOException e) {
        throw fail(p.segment(), e);
      } catch (JournalException e) {
        lock.lock();
        try {
          syncError = e;
          failedRound = round;
          // The waiters of this round fail with it; the next interval (or a new waiter) retries,
          // so the I/O thread does not spin on a full disk.
          requested = durable;
        } finally {
          lock.unlock();
        }
        throw e;
      } finally {
        lock.lock();
        if (forced >= 0) {
          // Only a force that returned makes anything durable.
          syncs++;
          forceNanos += (forced - forceNanos) / 8;
          advanceDurable(p.covered());
        }
        if (!retired.isEmpty()) {
          toClose = new ArrayList<>(retired);
          retired.clear();
        }
        syncDone.signalAll();
      }
    } finally {
      lock.unlock();
      if (toClose != null) {
        toClose.forEach(FileJournal::closeQuietly);
      }
    }
  }

  /** The I/O thread waits briefly for the critical appenders of the previous round (lock held). */
  private void gather() {
    if (pending >= expected) {
      return;
    }
    long left = Math.min(forceNanos / 2, MAX_GATHER_NANOS);
    while (pending < expected && left > 0 && !stopped && failure == null) {
      try {
        left = arrived.awaitNanos(left);
      } catch (InterruptedException e) {
        Thread.interrupted();
        return;
      }
    }
  }

  /**
   * Moves {@code durable} forward (lock held); the critical appenders it covers stop counting as
   * pending now, not when they get to run again.
   */
  private void advanceDurable(long to) {
    if (to <= durable) {
      return;
    }
    for (int i = 0; i < waiterCount; i++) {
      if (waiterTargets[i] > durable && waiterTargets[i] <= to) {
        pending--;
      }
    }
    durable = to;
  }

  private void addWaiter(long target) {
    if (waiterCount == waiterTargets.length) {
      waiterTargets = Arrays.copyOf(waiterTargets, waiterCount * 2);
    }
    waiterTargets[waiterCount++] = target;
  }

  /** Removes one waiter for {@code target} (lock held). */
  private void removeWaiter(long target) {
    for (int i = 0; i < waiterCount; i++) {
      if (waiterTargets[i] == target) {
        if (target > durable) {
          pending--;
        }
        waiterTargets[i] = waiterTargets[--waiterCount];
        return;
      }
    }
  }
}

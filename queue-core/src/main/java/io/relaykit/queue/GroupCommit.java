package io.relaykit.queue;

import java.io.IOException;
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
 * ticket. One thread at a time syncs (the leader): it drains the journal's buffer to the channel
 * under the journal's write lock ({@link Source#drain}) and calls {@code force} outside it, so
 * writers keep going during the fsync.
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
  private boolean syncing;
  /** The leader is waiting for the previous round's critical appenders. */
  private boolean gathering;
  /** Numbers each gathering; the appender that completes one takes the lead and records it. */
  private long gatherings;
  private long takenOver;
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
    JournalException f = new JournalException("journal " + dir + " failed: an fsync of "
        + segment + " failed (" + cause + "), so changes recorded since the last good one may not"
        + " be on disk; it refuses every change until it is closed and reopened (a reopen"
        + " recovers what is durable)", cause);
    lock.lock();
    try {
      if (failure == null) {
        failure = f;
        LOG.log(System.Logger.Level.ERROR, f.getMessage(), cause);
      }
      syncDone.signalAll();
      arrived.signalAll();
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
    } finally {
      lock.unlock();
    }
    toClose.forEach(FileJournal::closeQuietly);
  }

  /**
   * Returns once every byte up to {@code target} is fsynced. One thread at a time syncs (the
   * leader: whoever finds no sync running); the others wait for it, and a leader covers every
   * record written before it drains the buffer.
   *
   * <p>{@code critical} callers (CRITICAL appenders) are counted. A producer waiting for its own
   * record has one record outstanding, so with N of them one sync can cover at most N records,
   * and only if it starts after all N appended. When a sync ends, the producers it released need
   * a few microseconds to append again; a leader that syncs at once covers only those that were
   * already waiting, and the released ones wait a whole sync longer: the producers split into two
   * groups that alternate, about N/2 records per sync. So a critical leader first waits until as
   * many are waiting as were waiting at once in the previous round, or at most half a recent
   * sync's duration (at most 1 ms), then syncs; the appender that completes the group syncs
   * itself, at once, rather than waking the leader to do it. That wait is spent only when more
   * producers were active in the previous round than are waiting now; a lone producer never
   * waits.
   *
   * @throws JournalException when the journal failed or stopped before {@code target} was
   *     durable, or this caller's own sync could not write or force
   */
  void syncUpTo(long target, boolean critical) {
    List<FileChannel> toClose = null;
    lock.lock();
    try {
      boolean registered = critical && durable < target;
      boolean lead = false;
      if (registered) {
        addWaiter(target);
        pending++;
        roundPeak = Math.max(roundPeak, pending);
        if (gathering && pending >= expected) {
          // This appender completes the group: it syncs now, already running, instead of waking
          // the gathering leader to do it; that one waits for this sync like the others.
          gathering = false;
          takenOver = gatherings;
          lead = true;
          arrived.signal();
        }
      }
      try {
        while (durable < target) {
          checkNotFailed();
          if (stopped) {
            throw new JournalException("journal " + dir + " closed before the change was"
                + " durable");
          }
          if (!lead) {
            if (syncing) {
              awaitSync();
              continue;
            }
            syncing = true;
            if (critical && !gather()) {
              continue;
            }
          }
          lead = false;
          if (critical) {
            expected = roundPeak;
            roundPeak = 0;
          }
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
          } finally {
            lock.lock();
            syncing = false;
            if (forced >= 0) {
              // Only a force that returned makes anything durable.
              syncs++;
              forceNanos += (forced - forceNanos) / 8;
              advanceDurable(p.covered());
            }
            if (!retired.isEmpty()) {
              toClose = toClose == null ? new ArrayList<>() : toClose;
              toClose.addAll(retired);
              retired.clear();
            }
            syncDone.signalAll();
          }
        }
      } finally {
        if (registered) {
          removeWaiter(target);
        }
      }
    } finally {
      lock.unlock();
      if (toClose != null) {
        toClose.forEach(FileJournal::closeQuietly);
      }
    }
  }

  /**
   * The leader waits briefly for the critical appenders of the previous round (lock held).
   * Returns whether it still leads: false when the appender that completed the group took over.
   * Never throws: an interrupt ends the wait.
   */
  private boolean gather() {
    if (pending >= expected) {
      return true;
    }
    long left = Math.min(forceNanos / 2, MAX_GATHER_NANOS);
    long mine = ++gatherings;
    gathering = true;
    try {
      while (takenOver != mine && pending < expected && left > 0 && !stopped
          && failure == null) {
        try {
          left = arrived.awaitNanos(left);
        } catch (InterruptedException e) {
          // Sync now instead (unless taken over); the caller sees its interrupt flag.
          Thread.currentThread().interrupt();
          break;
        }
      }
    } finally {
      if (takenOver != mine) {
        gathering = false;
      }
    }
    return takenOver != mine;
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

  private void awaitSync() {
    try {
      syncDone.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JournalException("interrupted while waiting for journal " + dir + " to sync");
    }
  }
}

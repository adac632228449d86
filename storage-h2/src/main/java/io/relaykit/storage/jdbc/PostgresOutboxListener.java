package io.relaykit.storage.jdbc;

import io.relaykit.outbox.OutboxWakeup;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Receives other processes' outbox wakes on PostgreSQL: one daemon thread holding one dedicated
 * connection (opened by {@link JdbcStorage.ListenerConnections}, never a pool's) that runs {@code
 * LISTEN} on the outbox's channel and then only waits in {@link PGConnection#getNotifications(int)}
 * (which reads the socket and sends nothing: the listener adds no statements while idle). Each
 * batch of notifications wakes this JVM's relays ({@link OutboxWakeup#wake()}), and once more one
 * wake interval later (the trailing wake: it covers appends of the other process that skipped
 * their NOTIFY because one had just been sent). After every (re)connect it wakes once, for rows
 * committed while it was not listening.
 *
 * <p>Faults: a connection that fails (open or LISTEN throws, the link breaks, the server restarts)
 * is closed and opened again after a capped backoff ({@value #BACKOFF_MIN_MS} ms doubling to
 * {@value #BACKOFF_MAX_MS} ms, full jitter), logged at WARNING with the count; meanwhile relays
 * poll, so a lost NOTIFY costs at most their poll interval. An interrupt of the thread is counted
 * and ignored (only {@link #close} stops it). A silent link (no reset) is found by TCP keepalive
 * (set on the connection), not by queries: with the OS's defaults (about 2 h on Linux) and never
 * through a middlebox that keeps TCP alive; until then relays poll. Start and stop never run two
 * threads: a thread still winding down after a stop is kept by the next start. {@link #close} stops the thread within {@value
 * #WAIT_MS} ms plus a LISTEN in progress (bounded by a {@value #NETWORK_TIMEOUT_MS} ms network
 * timeout).
 */
final class PostgresOutboxListener implements AutoCloseable {
  private static final System.Logger LOG =
      System.getLogger(PostgresOutboxListener.class.getName());
  /** The longest wait in getNotifications: how soon the thread sees close. */
  static final int WAIT_MS = 500;
  static final int NETWORK_TIMEOUT_MS = 10_000;
  static final long BACKOFF_MIN_MS = 100;
  static final long BACKOFF_MAX_MS = 5_000;

  private final JdbcStorage.ListenerConnections connections;
  private final String channel;
  private final OutboxWakeup wakeup;
  private final long trailingNanos;
  private final Backoff backoff;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition stopped = lock.newCondition();
  private volatile boolean running;
  /** The one thread, or null when none runs; guarded by lock. */
  private Thread thread;
  private final AtomicLong connects = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong notifications = new AtomicLong();
  private final AtomicLong wakes = new AtomicLong();
  private final AtomicLong interrupts = new AtomicLong();
  private final AtomicLong waits = new AtomicLong();
  private volatile boolean listening;

  PostgresOutboxListener(JdbcStorage.ListenerConnections connections, String channel,
      OutboxWakeup wakeup, Duration wakeInterval) {
    this.connections = connections;
    this.channel = OutboxNotifier.requireChannel(channel);
    this.wakeup = wakeup;
    this.trailingNanos = Math.max(1, wakeInterval.toNanos());
    this.backoff = Backoff.exponential(Duration.ofMillis(BACKOFF_MIN_MS))
        .withMax(Duration.ofMillis(BACKOFF_MAX_MS)).withJitter(Jitter.FULL);
  }

  /**
   * Starts the thread; idempotent while running. A thread still winding down after {@link #stop}
   * is kept and goes on listening, so start/stop cycles never run two threads (or connections).
   */
  void start() {
    lock.lock();
    try {
      if (running) {
        return;
      }
      if (thread != null && thread.isAlive()) {
        running = true; // it sees running under the lock before it ends
        stopped.signalAll();
        return;
      }
      Thread t = new Thread(this::run, "relaykit-outbox-listener-" + channel);
      t.setDaemon(true);
      t.start(); // may throw (no thread): then nothing changed, and the next start tries again
      thread = t; // it reads running under this lock, so it sees both set
      running = true;
    } finally {
      lock.unlock();
    }
  }

  /** Asks the thread to stop; does not wait (see {@link #close(Duration)}). */
  void stop() {
    lock.lock();
    try {
      running = false;
      stopped.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the thread and waits up to {@code deadline} for it to end (closing its connection).
   *
   * @return whether it ended in time
   */
  boolean close(Duration deadline) {
    Thread t;
    lock.lock();
    try {
      t = thread;
    } finally {
      lock.unlock();
    }
    stop();
    if (t == null || t == Thread.currentThread()) {
      return true;
    }
    try {
      t.join(Math.max(1, deadline.toMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !t.isAlive();
  }

  @Override
  public void close() {
    close(Duration.ofMillis(NETWORK_TIMEOUT_MS + WAIT_MS));
  }

  /** Whether the thread goes on; false ends it (under the lock, so start sees it gone). */
  private boolean goOn() {
    lock.lock();
    try {
      if (running) {
        return true;
      }
      if (thread == Thread.currentThread()) {
        thread = null;
      }
      return false;
    } finally {
      lock.unlock();
    }
  }

  private void run() {
    int failed = 0;
    while (goOn()) {
      try (Connection c = connections.open()) {
        listen(c);
        failed = 0;
        receive(c.unwrap(PGConnection.class));
      } catch (SQLException | RuntimeException e) {
        if (!running) {
          continue;
        }
        failed++;
        failures.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "outbox listener on channel " + channel
            + " lost its connection (" + failed + " in a row); relays poll meanwhile, retrying"
            + " in up to " + backoff.delay(failed).toMillis() + " ms: " + e);
      } finally {
        listening = false;
      }
      if (running && failed > 0) {
        pause(backoff.delay(failed));
      }
    }
  }

  private void listen(Connection c) throws SQLException {
    c.setAutoCommit(true);
    c.setNetworkTimeout(Runnable::run, NETWORK_TIMEOUT_MS);
    try (Statement s = c.createStatement()) {
      s.execute("LISTEN \"" + channel + "\"");
    }
    long n = connects.incrementAndGet();
    listening = true;
    if (n > 1) {
      LOG.log(System.Logger.Level.INFO, "outbox listener on channel " + channel
          + " is listening again");
    }
    wake(); // rows committed while nobody listened
  }

  private void receive(PGConnection pg) throws SQLException {
    long trailingAt = 0;
    boolean trailing = false;
    while (running) {
      int wait = WAIT_MS;
      if (trailing) {
        long left = TimeUnit.NANOSECONDS.toMillis(trailingAt - System.nanoTime());
        wait = (int) Math.max(1, Math.min(WAIT_MS, left));
      }
      PGNotification[] received = pg.getNotifications(wait);
      waits.incrementAndGet();
      if (Thread.interrupted()) {
        interrupts.incrementAndGet(); // only close() stops the listener
      }
      long now = System.nanoTime();
      if (received != null && received.length > 0) {
        notifications.addAndGet(received.length);
        wake();
        trailing = true;
        trailingAt = now + trailingNanos;
      } else if (trailing && now - trailingAt >= 0) {
        trailing = false;
        wake();
      }
    }
  }

  private void wake() {
    wakes.incrementAndGet();
    wakeup.wake();
  }

  private void pause(Duration d) {
    lock.lock();
    try {
      long nanos = d.toNanos();
      while (running && nanos > 0) {
        try {
          nanos = stopped.awaitNanos(nanos);
        } catch (InterruptedException e) {
          interrupts.incrementAndGet(); // only close() stops the listener
        }
      }
    } finally {
      lock.unlock();
    }
  }

  boolean listening() {
    return listening;
  }

  long connects() {
    return connects.get();
  }

  long failures() {
    return failures.get();
  }

  long notifications() {
    return notifications.get();
  }

  long wakes() {
    return wakes.get();
  }

  /** Returns of getNotifications: how often the thread waited. */
  long waits() {
    return waits.get();
  }

  long interrupts() {
    return interrupts.get();
  }

  boolean alive() {
    Thread t;
    lock.lock();
    try {
      t = thread;
    } finally {
      lock.unlock();
    }
    return t != null && t.isAlive();
  }
}

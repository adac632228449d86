package io.relaykit.storage.jdbc;

import io.relaykit.outbox.OutboxWakeup;
import java.time.Duration;

/**
 * The wake signals of one {@link JdbcStorage}'s outbox: the in-JVM {@link OutboxWakeup} its stores
 * share, the coalesced NOTIFY of appends and the LISTEN thread (PostgreSQL only), which runs while
 * the wakeup has subscribers (started relays). At most one listener per storage.
 */
final class OutboxWakes implements OutboxWakeup.Demand {
  static final Duration DEFAULT_INTERVAL =
      Duration.ofMillis(JdbcStorage.DEFAULT_WAKE_INTERVAL_MILLIS);

  private final Dialect dialect;
  private final String channel;
  private final OutboxWakeup wakeup;
  private volatile boolean enabled = true;
  private volatile Duration interval = DEFAULT_INTERVAL;
  private volatile OutboxNotifier notifier;
  private volatile JdbcStorage.ListenerConnections connections;
  /** Guarded by this. */
  private PostgresOutboxListener listener;
  private boolean closed;

  OutboxWakes(Dialect dialect, String outboxTable, JdbcStorage.ListenerConnections connections) {
    this.dialect = dialect;
    this.channel = OutboxNotifier.channelOf(outboxTable);
    this.connections = connections;
    this.wakeup = OutboxWakeup.create(this);
    this.notifier = newNotifier();
  }

  private OutboxNotifier newNotifier() {
    return dialect == Dialect.POSTGRESQL && enabled
        ? new OutboxNotifier(channel, interval, System::nanoTime) : null;
  }

  OutboxWakeup wakeup() {
    return wakeup;
  }

  /** The NOTIFY sender for appends; null on H2 or when turned off. */
  OutboxNotifier notifier() {
    return notifier;
  }

  String channel() {
    return channel;
  }

  void interval(Duration interval) {
    if (interval == null || interval.isNegative()) {
      throw new IllegalArgumentException("outboxWakeInterval must be a duration >= 0, was "
          + interval);
    }
    this.interval = interval;
    this.notifier = newNotifier();
  }

  void enabled(boolean enabled) {
    this.enabled = enabled;
    this.notifier = newNotifier();
  }

  void connections(JdbcStorage.ListenerConnections connections) {
    this.connections = connections;
  }

  /** The listener, or null when none runs; for tests. */
  synchronized PostgresOutboxListener listener() {
    return listener;
  }

  @Override
  public synchronized void started() {
    if (closed || dialect != Dialect.POSTGRESQL || !enabled || connections == null) {
      return;
    }
    if (listener == null) {
      listener = new PostgresOutboxListener(connections, channel, wakeup, interval);
    }
    listener.start();
  }

  @Override
  public synchronized void stopped() {
    if (listener != null) {
      listener.stop();
    }
  }

  void close() {
    PostgresOutboxListener l;
    synchronized (this) {
      closed = true;
      l = listener;
    }
    if (l != null) {
      l.close();
    }
  }
}

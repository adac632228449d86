package io.relaykit.storage.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;

/**
 * The PostgreSQL side of the cross-process wake: a {@code pg_notify} sent inside an appending
 * transaction, at most once per wake interval per storage (so per JVM), since PostgreSQL
 * serialises the commits of transactions that notify. One notifier per {@link JdbcStorage},
 * shared by its outbox stores. The interval is measured on a monotonic source ({@link
 * System#nanoTime()} unless a test injects one); a source that steps back starts a new interval
 * at once rather than stalling NOTIFYs for the size of the step.
 */
final class OutboxNotifier {
  /** A PostgreSQL identifier relaykit quotes safely: lower case, digits, underscores, 1..63. */
  static final Pattern CHANNEL = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  private final String channel;
  private final long intervalNanos;
  private final LongSupplier nanoTime;
  private final AtomicLong last;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong skipped = new AtomicLong();

  OutboxNotifier(String channel, Duration interval, LongSupplier nanoTime) {
    this.channel = requireChannel(channel);
    if (interval == null || interval.isNegative()) {
      throw new IllegalArgumentException("outbox wake interval must be a duration >= 0, was "
          + interval);
    }
    this.intervalNanos = interval.toNanos();
    this.nanoTime = nanoTime;
    this.last = new AtomicLong(nanoTime.getAsLong() - intervalNanos - 1);
  }

  /**
   * The channel of the outbox table {@code outboxTable}: its name in lower case plus {@code
   * _wake}.
   *
   * @throws IllegalArgumentException if the result is not a plain identifier of at most 63
   *     characters (PostgreSQL cuts longer ones, and relaykit quotes none but plain ones)
   */
  static String channelOf(String outboxTable) {
    if (outboxTable == null) {
      throw new IllegalArgumentException("outbox table must not be null");
    }
    return requireChannel(outboxTable.toLowerCase(java.util.Locale.ROOT) + "_wake");
  }

  static String requireChannel(String channel) {
    if (channel == null || !CHANNEL.matcher(channel).matches()) {
      throw new IllegalArgumentException("outbox wake channel must match " + CHANNEL.pattern()
          + " (a PostgreSQL identifier of at most 63 characters), was "
          + (channel == null ? "null" : "'" + channel + "'"));
    }
    return channel;
  }

  String channel() {
    return channel;
  }

  /**
   * Takes this interval's NOTIFY if nobody took it yet: true means the caller sends it (with
   * {@link #send}) in its transaction, or gives it back with {@link #giveBack} if it cannot.
   */
  boolean claim() {
    if (intervalNanos == 0) {
      return true; // every append notifies
    }
    long now = nanoTime.getAsLong();
    long l = last.get();
    long since = now - l;
    // A source that stepped back (since < 0: never System.nanoTime, but an injected wall clock)
    // counts as a new interval, so a step back of an hour does not stall NOTIFYs for an hour.
    if ((since >= 0 && since < intervalNanos) || !last.compareAndSet(l, now)) {
      skipped.incrementAndGet();
      return false;
    }
    return true;
  }

  /** The claimed NOTIFY was not sent (its append failed): the next append sends one. */
  void giveBack() {
    last.set(nanoTime.getAsLong() - intervalNanos - 1);
  }

  /** Queues the NOTIFY in {@code tx}'s transaction: delivered when it commits, never otherwise. */
  void send(Connection tx) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("SELECT pg_notify(?, '')")) {
      ps.setString(1, channel);
      ps.execute();
    }
    sent.incrementAndGet();
  }

  long sent() {
    return sent.get();
  }

  long skipped() {
    return skipped.get();
  }
}

package io.relaykit.queue;

/**
 * How much an event or message matters when there is not room or time for everything.
 *
 * <p>Order is significant: a later constant ranks higher. {@link #CRITICAL} events (payments,
 * verification codes) are drained first, evicted last (by every {@link DropPolicy}: only when no
 * LOW or NORMAL event is pending), and made durable before {@code enqueue} returns; {@link
 * #NORMAL} and {@link #LOW} may be group-committed.
 */
public enum Priority {
  /** Evicted first (the oldest LOW event before any other); group-committed. */
  LOW,
  /** The default; group-committed. */
  NORMAL,
  /** Drained first, evicted last (only when nothing else is pending), durable before {@code
   * enqueue} returns. */
  CRITICAL;

  /**
   * Whether this priority ranks strictly higher than {@code other}.
   *
   * @param other the priority to compare with; not null
   * @return true if this priority is later in declaration order than {@code other}
   */
  public boolean outranks(Priority other) {
    return compareTo(other) > 0;
  }
}

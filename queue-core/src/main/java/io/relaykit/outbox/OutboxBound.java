package io.relaykit.outbox;

/**
 * How many unsent rows an outbox may hold, and what an append beyond that does: an application
 * must not append forever while the broker is down. Immutable.
 *
 * <ul>
 *   <li>{@link OverBound#REFUSE}: an append that finds the backlog at its bound throws {@link
 *       OutboxFullException} and writes nothing; the caller's business transaction decides (roll
 *       back, answer 503). Counted by the store.
 *   <li>{@link OverBound#ACCEPT}: the append succeeds, is counted, and the relay's backlog verdict
 *       becomes {@link io.relaykit.monitor.BacklogVerdict#OVER_BOUND} while the backlog is over
 *       the bound, so an operator is paged instead of a business write failing.
 * </ul>
 * A store checks the bound against its count of unsent rows; how exact that count is at the
 * moment of an append depends on the store (the in-memory store's is exact; the JDBC store's is
 * sampled at most once a second, see its documentation).
 *
 * @param maxUnsent the most unsent rows; {@link Long#MAX_VALUE} for no bound
 * @param overBound what an append over the bound does
 */
public record OutboxBound(long maxUnsent, OverBound overBound) {

  /** What an append over the bound does. */
  public enum OverBound {
    /** Throw {@link OutboxFullException}; nothing is written. */
    REFUSE,
    /** Write it, count it, and raise the backlog verdict to OVER_BOUND. */
    ACCEPT
  }

  private static final OutboxBound UNBOUNDED = new OutboxBound(Long.MAX_VALUE, OverBound.ACCEPT);

  /**
   * A checked bound.
   *
   * @param maxUnsent the most unsent rows, {@code >= 1}
   * @param overBound what an append over the bound does; not null
   * @throws IllegalArgumentException naming the field: maxUnsent below 1, a null overBound
   */
  public OutboxBound {
    if (maxUnsent < 1) {
      throw new IllegalArgumentException("maxUnsent must be >= 1, was " + maxUnsent);
    }
    if (overBound == null) {
      throw new IllegalArgumentException("overBound must not be null: REFUSE or ACCEPT");
    }
  }

  /**
   * No bound: every append is accepted.
   *
   * @return the shared unbounded bound ({@link Long#MAX_VALUE}, ACCEPT)
   */
  public static OutboxBound unbounded() {
    return UNBOUNDED;
  }

  /**
   * Appends that find {@code maxUnsent} unsent rows are refused with OutboxFullException.
   *
   * @param maxUnsent the bound, {@code >= 1}
   * @return a REFUSE bound
   * @throws IllegalArgumentException if {@code maxUnsent < 1}
   */
  public static OutboxBound refuseAbove(long maxUnsent) {
    return new OutboxBound(maxUnsent, OverBound.REFUSE);
  }

  /**
   * Appends over {@code maxUnsent} unsent rows are accepted, counted and raise the verdict.
   *
   * @param maxUnsent the bound, {@code >= 1}
   * @return an ACCEPT bound
   * @throws IllegalArgumentException if {@code maxUnsent < 1}
   */
  public static OutboxBound acceptAbove(long maxUnsent) {
    return new OutboxBound(maxUnsent, OverBound.ACCEPT);
  }

  /**
   * Whether there is a bound at all.
   *
   * @return false only for {@code maxUnsent} {@link Long#MAX_VALUE}
   */
  public boolean isBounded() {
    return maxUnsent != Long.MAX_VALUE;
  }

  /**
   * Decides an append that finds {@code unsent} unsent rows: throws for REFUSE at or over the
   * bound; otherwise returns whether this append is over it (to be counted).
   *
   * @param unsent the unsent rows the store counted before this append
   * @param where the outbox, named in the exception's message
   * @return true if the append is accepted over the bound; false if it is under it
   * @throws OutboxFullException for REFUSE when {@code unsent >= maxUnsent}
   */
  public boolean admit(long unsent, String where) {
    if (unsent < maxUnsent) {
      return false;
    }
    if (overBound == OverBound.REFUSE) {
      throw new OutboxFullException(where, unsent, maxUnsent);
    }
    return true;
  }
}

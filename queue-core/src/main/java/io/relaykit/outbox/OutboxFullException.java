package io.relaykit.outbox;

/**
 * An append was refused because the outbox holds as many unsent rows as its {@link OutboxBound}
 * allows (with {@link OutboxBound.OverBound#REFUSE}). Nothing was written; the caller's
 * transaction is untouched and the caller decides (roll back, answer 503 with Retry-After, try
 * later). Appends succeed again once the relay has drained the backlog below the bound.
 */
public final class OutboxFullException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  /** The unsent rows the outbox counted when it refused. */
  private final long unsent;
  /** The outbox's bound. */
  private final long maxUnsent;

  /**
   * An append refused because {@code where} holds {@code unsent} unsent rows.
   *
   * @param where the outbox, as the message names it
   * @param unsent the unsent rows it counted
   * @param maxUnsent its bound
   */
  public OutboxFullException(String where, long unsent, long maxUnsent) {
    super(where + " holds " + unsent + " unsent rows, at its bound of " + maxUnsent
        + " (OverBound.REFUSE): the append was refused and nothing was written; is the broker"
        + " or the relay down?");
    this.unsent = unsent;
    this.maxUnsent = maxUnsent;
  }

  /**
   * The unsent rows the outbox counted when it refused.
   *
   * @return the count, at least {@link #maxUnsent()}
   */
  public long unsent() {
    return unsent;
  }

  /**
   * The bound.
   *
   * @return the bound, {@code >= 1}
   */
  public long maxUnsent() {
    return maxUnsent;
  }
}

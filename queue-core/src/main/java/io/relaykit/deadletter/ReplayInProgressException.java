package io.relaykit.deadletter;

import java.time.Instant;

/**
 * Another replay holds the dead letter's replay mark and its lease has not run out: that replay
 * may still resend it. Try again after {@link #until()}; if the other replay crashed or lost its
 * reply, the mark is taken over then.
 */
public final class ReplayInProgressException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final transient Instant until;

  /**
   * A refused replay.
   *
   * @param id the dead letter's id
   * @param until when the other replay's mark lapses, on the store's clock; null if unknown
   */
  public ReplayInProgressException(String id, Instant until) {
    super("dead letter " + id + " is being replayed by another call"
        + (until == null ? "" : " (its mark lapses at " + until + ")") + "; try again later");
    this.until = until;
  }

  /**
   * When the other replay's mark lapses, on the store's clock.
   *
   * @return the instant, or null if the store did not say
   */
  public Instant until() {
    return until;
  }
}

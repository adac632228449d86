package io.relaykit.queue;

/**
 * A {@link QueueJournal} could not record or replay a change: an I/O failure, a corrupt record, a
 * wrong decryption key, a lost commit acknowledgement. The message says which journal, where, and
 * what was wrong; {@link #outcome()} says whether the change may have been recorded anyway.
 *
 * <p>A journal that knows nothing reached its storage (it refused before writing: closed, full,
 * a write that failed before any byte left the process) says {@link Outcome#NOT_RECORDED}: the
 * change never comes back after a restart. Anything else is {@link Outcome#UNKNOWN}: the change
 * may or may not be replayed after a restart (a failed fsync, a commit whose answer was lost), so
 * the caller must neither count on it nor assume it is gone; a retry of the same change (same
 * event id) is safe, because every journal applies a repeated change idempotently. The one-
 * and two-argument constructors say {@code UNKNOWN}: a journal claims "not recorded" only when it
 * can prove it.
 */
public class JournalException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Whether the failed change may still have been recorded. */
  public enum Outcome {
    /** Nothing reached the journal's storage: the change is not replayed after a restart. */
    NOT_RECORDED,
    /** The change may or may not be replayed after a restart. */
    UNKNOWN
  }

  /** Whether the failed change may still have been recorded. */
  private final Outcome outcome;

  /**
   * A failure whose outcome is {@link Outcome#UNKNOWN}.
   *
   * @param message which journal, where, and what was wrong
   */
  public JournalException(String message) {
    this(message, null, Outcome.UNKNOWN);
  }

  /**
   * A failure whose outcome is {@link Outcome#UNKNOWN}.
   *
   * @param message which journal, where, and what was wrong
   * @param cause the underlying failure; may be null
   */
  public JournalException(String message, Throwable cause) {
    this(message, cause, Outcome.UNKNOWN);
  }

  /**
   * A failure with a known outcome.
   *
   * @param message which journal, where, and what was wrong
   * @param cause the underlying failure; may be null
   * @param outcome whether the change may have been recorded; not null
   * @throws IllegalArgumentException if {@code outcome} is null
   */
  public JournalException(String message, Throwable cause, Outcome outcome) {
    super(message, cause);
    if (outcome == null) {
      throw new IllegalArgumentException("outcome must not be null");
    }
    this.outcome = outcome;
  }

  /**
   * Whether the change may have been recorded anyway.
   *
   * @return {@link Outcome#NOT_RECORDED} or {@link Outcome#UNKNOWN}; never null
   */
  public Outcome outcome() {
    return outcome;
  }

  /**
   * Whether the journal proved that nothing of the change was recorded.
   *
   * @return true for {@link Outcome#NOT_RECORDED}
   */
  public boolean notRecorded() {
    return outcome == Outcome.NOT_RECORDED;
  }
}

package io.relaykit.queue;

/**
 * A {@link QueueJournal} refused a change because the changes it holds for its backend, not yet
 * committed, reached their bound (the database or Redis is down or slower than the producers).
 * Nothing was recorded ({@link Outcome#NOT_RECORDED}); the same change may succeed once the backend
 * catches up. A {@link ReportQueue} answers {@link EnqueueResult.Reason#JOURNAL_FULL} for a
 * non-critical event and throws this for a {@link Priority#CRITICAL} one, at once: a critical
 * producer learns within the call that its event is not queued, rather than waiting on a commit
 * that cannot happen.
 */
public class JournalFullException extends JournalException {
  private static final long serialVersionUID = 1L;

  /**
   * A refusal; its outcome is {@link Outcome#NOT_RECORDED}.
   *
   * @param message which journal and its bound
   */
  public JournalFullException(String message) {
    super(message, null, Outcome.NOT_RECORDED);
  }

  /**
   * A refusal caused by {@code cause}; its outcome is {@link Outcome#NOT_RECORDED}.
   *
   * @param message which journal and its bound
   * @param cause the underlying failure; may be null
   */
  public JournalFullException(String message, Throwable cause) {
    super(message, cause, Outcome.NOT_RECORDED);
  }
}

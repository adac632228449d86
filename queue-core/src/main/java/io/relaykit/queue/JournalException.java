package io.relaykit.queue;

/**
 * A {@link QueueJournal} could not record or replay a change: an I/O failure, a corrupt record, a
 * wrong decryption key. The message says which journal, where, and what was wrong.
 */
public class JournalException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public JournalException(String message) {
    super(message);
  }

  public JournalException(String message, Throwable cause) {
    super(message, cause);
  }
}

package io.relaykit.poller;

/**
 * Where an asynchronous job stands. {@link #SUCCESS} and {@link #FAILED} are terminal: a job that
 * was dead-lettered is {@code FAILED}, never left {@code PROCESSING}.
 */
public enum JobStatus {
  /** Accepted and stored; no worker has picked it up yet. */
  PENDING,
  /** A worker is on it (including retries after transient failures). */
  PROCESSING,
  /** Done. */
  SUCCESS,
  /** Given up; the status document's {@code error} says why. */
  FAILED;

  /**
   * Whether the job will not change status again.
   *
   * @return true for {@code SUCCESS} and {@code FAILED}
   */
  public boolean isTerminal() {
    return this == SUCCESS || this == FAILED;
  }
}

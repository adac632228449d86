package io.relaykit.poller;

import java.time.Duration;
import java.util.Optional;

/**
 * How a poll ended.
 *
 * @param result why polling stopped
 * @param last the last status document read; null if none was read
 * @param attempts status requests made
 * @param elapsed time from the start of polling to the end, by the poller's clock
 * @param detail a sentence for a person: the job's error, "still working — check later", the HTTP
 *     failure that stopped polling
 */
public record PollOutcome(
    Result result, StatusDocument last, int attempts, Duration elapsed, String detail) {

  /** Why polling stopped. */
  public enum Result {
    /** The job reached {@link JobStatus#SUCCESS}. */
    SUCCESS,
    /** The job reached {@link JobStatus#FAILED}; {@link #detail()} holds its error. */
    FAILED,
    /** The deadline passed while the job was still running: "still working — check later". */
    TIMED_OUT,
    /** The attempt limit was reached while the job was still running. */
    MAX_ATTEMPTS,
    /** {@link Poll#cancel()} was called. */
    CANCELLED,
    /** The status URL answered something polling cannot recover from (404, 410, a bad body). */
    ERROR
  }

  /**
   * The last status document received, if any request got one.
   *
   * @return the last document, or empty when none was read
   */
  public Optional<StatusDocument> lastDocument() {
    return Optional.ofNullable(last);
  }

  /**
   * Whether the job itself finished (successfully or not), as opposed to polling giving up.
   *
   * @return true for {@code SUCCESS} and {@code FAILED}
   */
  public boolean jobFinished() {
    return result == Result.SUCCESS || result == Result.FAILED;
  }
}

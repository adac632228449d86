package io.relaykit.idempotency;

/**
 * What a run-once call did with its work: ran it, skipped it because it is done, or skipped it
 * because someone else holds the key now. The last two differ for the caller: DONE work is
 * finished (acknowledge the message), work IN_PROGRESS elsewhere may still fail and be released,
 * so the caller must try again later rather than treat it as done.
 */
public enum RunOnceResult {
  /** The work ran in the caller's transaction; commit to make it and its key count. */
  RAN,
  /** The key is DONE: the work was done before; skip it and acknowledge. */
  ALREADY_DONE,
  /**
   * Another caller holds a live claim on the key (through {@link IdempotencyStore#claim}): the
   * work did not run and is not known to be done. Retry later; do not acknowledge as done.
   */
  IN_PROGRESS;

  /**
   * Whether the work ran in this call.
   *
   * @return true for {@link #RAN} only
   */
  public boolean ran() {
    return this == RAN;
  }
}

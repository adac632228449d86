package io.relaykit.queue;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link ReportQueue#enqueue} did with an event.
 *
 * @param reason {@link Reason#OK} when the event was accepted, else why it was not
 * @param droppedIds events evicted to make room for this one (empty unless the drop policy evicted
 *     something), oldest first
 */
public record EnqueueResult(Reason reason, List<String> droppedIds) {

  /** Why an event was or was not accepted. */
  public enum Reason {
    /** Accepted; durable before return when {@code CRITICAL}. */
    OK,
    /** Its id is pending, in flight, dead, or was seen within the dedupe window. */
    DUPLICATE,
    /** No room, and the drop policy would not evict anything for it. */
    QUEUE_FULL,
    /** Already past its expiry. */
    EXPIRED,
    /** Its payload alone is larger than the queue's byte capacity. */
    TOO_LARGE,
    /**
     * The journal holds as many uncommitted changes as it may (its database or Redis is down or
     * behind): nothing was recorded or evicted, and the same event may be offered again later.
     * Counted in {@link QueueStats#journalFull()}. Never for a {@code CRITICAL} event: its enqueue
     * throws {@link JournalFullException} instead, so that its producer cannot mistake it for a
     * drop it may ignore.
     */
    JOURNAL_FULL
  }

  private static final EnqueueResult OK = new EnqueueResult(Reason.OK, List.of());

  /**
   * Copies {@code droppedIds}.
   *
   * @param reason why the event was or was not accepted; not null
   * @param droppedIds the evicted events' ids, oldest first; not null
   * @throws NullPointerException if an argument is null
   */
  public EnqueueResult {
    Objects.requireNonNull(reason, "reason");
    droppedIds = List.copyOf(droppedIds);
  }

  static EnqueueResult ok(List<String> droppedIds) {
    return droppedIds.isEmpty() ? OK : new EnqueueResult(Reason.OK, droppedIds);
  }

  static EnqueueResult rejected(Reason reason) {
    return new EnqueueResult(reason, List.of());
  }

  /**
   * Whether the queue took the event.
   *
   * @return true for {@link Reason#OK}
   */
  public boolean accepted() {
    return reason == Reason.OK;
  }

  /**
   * The first (oldest) event evicted to make room, if any.
   *
   * @return the id, or empty if nothing was evicted
   */
  public Optional<String> droppedId() {
    return droppedIds.isEmpty() ? Optional.empty() : Optional.of(droppedIds.get(0));
  }
}

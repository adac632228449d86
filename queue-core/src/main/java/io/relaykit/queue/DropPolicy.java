package io.relaykit.queue;

/**
 * What a full {@link ReportQueue} does with a new event. Only pending events (not yet handed to a
 * sender) are ever evicted; a dropped event is not marked seen, so it may be reported again.
 */
public enum DropPolicy {
  /**
   * Evict the lowest-priority, oldest pending event, but only when the new event ranks strictly
   * higher; otherwise reject the new event. Cheap events never push out important ones.
   */
  DROP_LOWEST_PRIORITY,
  /** Evict the oldest pending event, whatever its priority. */
  DROP_OLDEST,
  /** Keep what is queued and reject the new event. */
  REJECT_NEW
}

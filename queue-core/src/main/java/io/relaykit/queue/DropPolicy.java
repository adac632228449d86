package io.relaykit.queue;

/**
 * What a full {@link ReportQueue} does with a new event. Only pending events (not yet handed to a
 * sender) are ever evicted; a dropped event is not marked seen, so it may be reported again.
 *
 * <p>The two evicting policies take victims in the same order: the oldest pending event of the
 * lowest priority that has one, so a {@link Priority#CRITICAL} event is evicted only when no
 * {@link Priority#LOW} or {@link Priority#NORMAL} event is pending. They differ in whether the new
 * event may be refused.
 */
public enum DropPolicy {
  /**
   * Evict the lowest-priority, oldest pending event, but only when the new event ranks strictly
   * higher; otherwise reject the new event. Cheap events never push out important ones.
   */
  DROP_LOWEST_PRIORITY,
  /**
   * Always accept the new event: evict the oldest pending event of the lowest priority that has
   * one (LOW first, then NORMAL, CRITICAL only when nothing else is pending). Fresh events win
   * over old ones of the same or lower priority; a new LOW event may evict a CRITICAL one only
   * when every pending event is CRITICAL.
   */
  DROP_OLDEST,
  /** Keep what is queued and reject the new event. */
  REJECT_NEW
}

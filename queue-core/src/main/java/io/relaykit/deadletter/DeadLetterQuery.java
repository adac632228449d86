package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * Which dead letters to list, count or purge, and which page. Every filter is optional (null
 * matches all); filters combine with AND. Results are ordered by last failure time, then id, so
 * paging with {@code offset}/{@code limit} is stable while no dead letters are added.
 *
 * @param messageId exact id of the message (its dead letters at every source and group)
 * @param reasonContains case-sensitive substring of the reason
 * @param type exact message type
 * @param source exact source
 * @param group exact consumer group (dead letters of no group never match a group filter)
 * @param failedFrom last failure at or after this instant
 * @param failedBefore last failure before this instant
 * @param offset entries to skip, {@code >= 0}
 * @param limit page size, {@code 1..10_000}
 */
public record DeadLetterQuery(
    String messageId,
    String reasonContains,
    String type,
    String source,
    String group,
    Instant failedFrom,
    Instant failedBefore,
    int offset,
    int limit) {

  /** The largest page a store must serve in one call. */
  public static final int MAX_LIMIT = 10_000;

  public DeadLetterQuery {
    if (offset < 0) {
      throw new IllegalArgumentException("offset must be >= 0, was " + offset);
    }
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be in 1.." + MAX_LIMIT + ", was " + limit);
    }
    if (failedFrom != null && failedBefore != null && !failedBefore.isAfter(failedFrom)) {
      throw new IllegalArgumentException(
          "failedBefore (" + failedBefore + ") must be after failedFrom (" + failedFrom + ")");
    }
  }

  /** Everything, first page of 100. */
  public static DeadLetterQuery all() {
    return new DeadLetterQuery(null, null, null, null, null, null, null, 0, 100);
  }

  /** Only the dead letters of message {@code messageId}, at any source and for any group. */
  public DeadLetterQuery withMessageId(String messageId) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  public DeadLetterQuery withReasonContains(String reasonContains) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  public DeadLetterQuery withType(String type) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  public DeadLetterQuery withSource(String source) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /** Only the dead letters of consumer group {@code group}. */
  public DeadLetterQuery withGroup(String group) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  public DeadLetterQuery withFailedBetween(Instant from, Instant before) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, from, before,
        offset, limit);
  }

  public DeadLetterQuery withPage(int offset, int limit) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /** Whether the query filters on anything but time (and paging). */
  public boolean hasContentFilter() {
    return messageId != null || reasonContains != null || type != null || source != null
        || group != null;
  }

  /** Whether {@code d} passes every filter (paging aside). */
  public boolean matches(DeadLetter d) {
    Checks.requireNonNull("deadLetter", d);
    return (messageId == null || messageId.equals(d.messageId()))
        && (reasonContains == null || d.reason().contains(reasonContains))
        && (type == null || type.equals(d.message().type()))
        && (source == null || source.equals(d.source()))
        && (group == null || group.equals(d.group()))
        && (failedFrom == null || !d.lastFailureAt().isBefore(failedFrom))
        && (failedBefore == null || d.lastFailureAt().isBefore(failedBefore));
  }
}

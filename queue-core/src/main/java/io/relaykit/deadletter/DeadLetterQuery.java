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

  /**
   * Checks the paging and the time range.
   *
   * @param messageId exact message id, or null
   * @param reasonContains substring of the reason, or null
   * @param type exact message type, or null
   * @param source exact source, or null
   * @param group exact consumer group, or null
   * @param failedFrom inclusive lower bound of the last failure, or null
   * @param failedBefore exclusive upper bound of the last failure, or null
   * @param offset entries to skip, {@code >= 0}
   * @param limit page size, {@code 1..MAX_LIMIT}
   * @throws IllegalArgumentException if {@code offset} is negative, {@code limit} is out of range,
   *     or {@code failedBefore} is not after {@code failedFrom}
   */
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

  /**
   * Everything, first page of 100.
   *
   * @return a query without filters for offset 0, limit 100
   */
  public static DeadLetterQuery all() {
    return new DeadLetterQuery(null, null, null, null, null, null, null, 0, 100);
  }

  /**
   * Only the dead letters of message {@code messageId}, at any source and for any group.
   *
   * @param messageId the message id, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withMessageId(String messageId) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Only the dead letters whose reason contains {@code reasonContains} (case-sensitive).
   *
   * @param reasonContains the substring, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withReasonContains(String reasonContains) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Only the dead letters of messages of type {@code type}.
   *
   * @param type the exact type, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withType(String type) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Only the dead letters of {@code source}.
   *
   * @param source the exact source, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withSource(String source) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Only the dead letters of consumer group {@code group}.
   *
   * @param group the exact group, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withGroup(String group) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Only the dead letters whose last failure is in {@code [from, before)}.
   *
   * @param from the inclusive lower bound, or null for none
   * @param before the exclusive upper bound, or null for none
   * @return a copy of this query with the range replaced
   * @throws IllegalArgumentException if both are given and {@code before} is not after {@code from}
   */
  public DeadLetterQuery withFailedBetween(Instant from, Instant before) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, from, before,
        offset, limit);
  }

  /**
   * The page to return.
   *
   * @param offset entries to skip, {@code >= 0}
   * @param limit page size, {@code 1..MAX_LIMIT}
   * @return a copy of this query with the page replaced
   * @throws IllegalArgumentException if {@code offset} or {@code limit} is out of range
   */
  public DeadLetterQuery withPage(int offset, int limit) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit);
  }

  /**
   * Whether the query filters on anything but time (and paging).
   *
   * @return true if a message id, reason, type, source or group filter is set
   */
  public boolean hasContentFilter() {
    return messageId != null || reasonContains != null || type != null || source != null
        || group != null;
  }

  /**
   * Whether {@code d} passes every filter (paging aside).
   *
   * @param d the dead letter to test; not null
   * @return true if every set filter matches; O(filters), a reason filter O(reason length)
   * @throws IllegalArgumentException if {@code d} is null
   */
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

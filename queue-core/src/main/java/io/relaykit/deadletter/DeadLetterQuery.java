package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * Which dead letters to list, count or purge, and which page. Every filter is optional (null
 * matches all); filters combine with AND. Results are ordered by last failure time, then id
 * (oldest first, or newest first with {@link #newestFirst()}).
 *
 * <p>Two ways to page: {@code offset}/{@code limit}, stable while no dead letters are added, which
 * costs a store O(offset + limit) rows read; or keyset paging with {@link #withAfter}: the page
 * starts strictly after a {@link Position} (the last dead letter of the previous page) in the
 * query's order, which a store with an index on (last failure, id) serves reading about {@code
 * limit} rows however deep the page, and which stays correct while dead letters are added or
 * removed. {@code offset} applies after the position.
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
 * @param exceptionClass exact class name of the exception of the last failure ({@link
 *     DeadLetter#exceptionClass()}); dead letters without one never match
 * @param after keyset paging: only dead letters strictly after this position in the query's
 *     order, or null to start at the first
 * @param newestFirst order by last failure time, then id, descending instead of ascending
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
    int limit,
    String exceptionClass,
    Position after,
    boolean newestFirst) {

  /** The largest page a store must serve in one call. */
  public static final int MAX_LIMIT = 10_000;

  /**
   * Where a page starts in keyset paging: a dead letter's last failure time and {@linkplain
   * DeadLetter#id() id}.
   *
   * @param lastFailureAt the dead letter's last failure time; not null
   * @param id the dead letter's id; not blank
   */
  public record Position(Instant lastFailureAt, String id) {
    /**
     * Checks both parts.
     *
     * @param lastFailureAt the last failure time; not null
     * @param id the id; not blank
     * @throws IllegalArgumentException if a part is missing
     */
    public Position {
      Checks.requireNonNull("lastFailureAt", lastFailureAt);
      Checks.requireNonBlank("id", id);
    }

    /**
     * The position of {@code d}: the next page starts after it.
     *
     * @param d the last dead letter of a page; not null
     * @return its position
     * @throws IllegalArgumentException if {@code d} is null
     */
    public static Position of(DeadLetter d) {
      Checks.requireNonNull("deadLetter", d);
      return new Position(d.lastFailureAt(), d.id());
    }

    /**
     * Compares {@code d} with this position in ascending order (last failure time, then id).
     *
     * @param d a dead letter; not null
     * @return negative if {@code d} comes before this position, 0 if at it, positive if after
     */
    public int compareTo(DeadLetter d) {
      int c = d.lastFailureAt().compareTo(lastFailureAt);
      return c != 0 ? c : d.id().compareTo(id);
    }
  }

  /**
   * A query oldest first without exception-class filter or keyset position (the shape before
   * those were added).
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
   * @throws IllegalArgumentException as the canonical constructor
   */
  public DeadLetterQuery(String messageId, String reasonContains, String type, String source,
      String group, Instant failedFrom, Instant failedBefore, int offset, int limit) {
    this(messageId, reasonContains, type, source, group, failedFrom, failedBefore, offset, limit,
        null, null, false);
  }

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
   * @param exceptionClass exact exception class name of the last failure, or null
   * @param after keyset position the page starts after, or null
   * @param newestFirst descending order instead of ascending
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
    return new DeadLetterQuery(null, null, null, null, null, null, null, 0, 100, null, null,
        false);
  }

  /**
   * Only the dead letters of message {@code messageId}, at any source and for any group.
   *
   * @param messageId the message id, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withMessageId(String messageId) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Only the dead letters whose reason contains {@code reasonContains} (case-sensitive).
   *
   * @param reasonContains the substring, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withReasonContains(String reasonContains) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Only the dead letters of messages of type {@code type}.
   *
   * @param type the exact type, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withType(String type) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Only the dead letters of {@code source}.
   *
   * @param source the exact source, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withSource(String source) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Only the dead letters of consumer group {@code group}.
   *
   * @param group the exact group, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withGroup(String group) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
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
        offset, limit, exceptionClass, after, newestFirst);
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
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Only the dead letters whose last failure's exception class is {@code exceptionClass}.
   *
   * @param exceptionClass the exact class name, or null to drop the filter
   * @return a copy of this query with the filter replaced
   */
  public DeadLetterQuery withExceptionClass(String exceptionClass) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Keyset paging: the page starts strictly after {@code after} in this query's order.
   *
   * @param after the last dead letter's position on the previous page, or null for the first page
   * @return a copy of this query with the position replaced
   */
  public DeadLetterQuery withAfter(Position after) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * The order: newest first (last failure time, then id, descending) or oldest first.
   *
   * @param newestFirst true for descending order
   * @return a copy of this query with the order replaced
   */
  public DeadLetterQuery withNewestFirst(boolean newestFirst) {
    return new DeadLetterQuery(messageId, reasonContains, type, source, group, failedFrom,
        failedBefore, offset, limit, exceptionClass, after, newestFirst);
  }

  /**
   * Whether the query filters on anything but time (and paging).
   *
   * @return true if a message id, reason, type, source, group or exception class filter is set
   */
  public boolean hasContentFilter() {
    return messageId != null || reasonContains != null || type != null || source != null
        || group != null || exceptionClass != null;
  }

  /**
   * Whether {@code d} lies strictly after {@link #after()} in this query's order (true when no
   * position is set). Stores that page in memory use it; a database store puts it in its WHERE.
   *
   * @param d the dead letter to test; not null
   * @return true if {@code d} belongs on a page that starts after the position
   */
  public boolean isAfterPosition(DeadLetter d) {
    if (after == null) {
      return true;
    }
    int c = after.compareTo(d);
    return newestFirst ? c < 0 : c > 0;
  }

  /**
   * Whether {@code d} passes every filter (paging, including the keyset position, aside: see
   * {@link #isAfterPosition}).
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
        && (exceptionClass == null || exceptionClass.equals(d.exceptionClass()))
        && (failedFrom == null || !d.lastFailureAt().isBefore(failedFrom))
        && (failedBefore == null || d.lastFailureAt().isBefore(failedBefore));
  }
}

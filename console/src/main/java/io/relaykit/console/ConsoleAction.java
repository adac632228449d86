package io.relaykit.console;

import io.relaykit.deadletter.DeadLetterQuery;
import java.time.Instant;
import java.util.Objects;

/**
 * What one console action does, fixed when its form renders: the request that runs it carries
 * only the action's id, so it cannot change the target.
 *
 * @param kind what it does
 * @param store the console's name of the store
 * @param deadLetterId the dead letter of a single action; null for a set
 * @param filter the set of a set action; null for a single one
 * @param expected how many dead letters the set held when its confirmation rendered; a set
 *     action touches at most this many
 * @param head the newest dead letter of the set when its confirmation rendered; a set action
 *     leaves newer ones (dead-lettered after the operator confirmed) alone; null for a single
 *     action or an empty set
 */
record ConsoleAction(Kind kind, String store, String deadLetterId, Filter filter,
    long expected, DeadLetterQuery.Position head) {

  /** The four actions. */
  enum Kind {
    REPLAY_ONE("replay", "replay-one"),
    PURGE_ONE("purge", "purge-one"),
    REPLAY_SET("replay", "replay-set"),
    PURGE_SET("purge", "purge-set");

    final String verb;
    final String label;

    Kind(String verb, String label) {
      this.verb = verb;
      this.label = label;
    }

    boolean single() {
      return this == REPLAY_ONE || this == PURGE_ONE;
    }
  }

  ConsoleAction {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(store, "store");
    if (kind.single() != (deadLetterId != null) || kind.single() == (filter != null)) {
      throw new IllegalArgumentException(kind + " takes " + (kind.single() ? "an id" : "a filter"));
    }
  }

  /** One line: what it does, for the log and the pages. */
  String describe() {
    return kind.single() ? kind.verb + " dead letter " + deadLetterId + " of store " + store
        : kind.verb + " the dead letters of store " + store + " matching " + filter.describe()
            + " (" + expected + " when confirmed)";
  }

  /**
   * The filters of the dead-letter list; null parts match everything.
   *
   * @param source exact destination
   * @param group exact consumer group
   * @param reason substring of the reason
   * @param exceptionClass exact exception class name
   * @param from last failure at or after
   * @param before last failure before
   */
  record Filter(String source, String group, String reason, String exceptionClass, Instant from,
      Instant before) {

    static final Filter ALL = new Filter(null, null, null, null, null, null);

    /** The query of this filter, newest first, a page of {@code limit}. */
    DeadLetterQuery query(int limit) {
      return new DeadLetterQuery(null, reason, null, source, group, from, before, 0, limit,
          exceptionClass, null, true);
    }

    boolean isAll() {
      return equals(ALL);
    }

    String describe() {
      if (isAll()) {
        return "no filter";
      }
      StringBuilder b = new StringBuilder();
      part(b, "destination", source);
      part(b, "group", group);
      part(b, "reason contains", reason);
      part(b, "exception", exceptionClass);
      part(b, "from", from == null ? null : from.toString());
      part(b, "before", before == null ? null : before.toString());
      return b.toString();
    }

    private static void part(StringBuilder b, String name, String value) {
      if (value != null) {
        if (b.length() > 0) {
          b.append(", ");
        }
        b.append(name).append(" \"").append(value).append('"');
      }
    }
  }
}

package io.relaykit.deadletter;

import java.time.Duration;
import java.time.Instant;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Where messages that gave up are kept, to be inspected, replayed or purged.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #add} is idempotent per {@linkplain DeadLetter#id() id} (message id, source and
 *       consumer group): adding a dead letter whose id is present replaces it; dead letters of
 *       one message at two sources or for two groups are two entries, and neither overwrites the
 *       other. A dead letter, once added, is never lost until removed or purged.
 *   <li>{@link #remove} hands a dead letter out at most once, even under concurrent callers: that
 *       is what makes {@link DeadLetterReplayer replay} idempotent.
 *   <li>Listing is ordered by last failure time, then id; see {@link DeadLetterQuery}.
 *   <li>Replay marks ({@link #marksReplays()}): {@link #beginReplay} marks a dead letter with the
 *       replay's token for a lease (on the store's clock) without removing it; {@link
 *       #finishReplay} removes it only while it still carries that token, {@link #abandonReplay}
 *       clears the mark. {@link #add} of the same id replaces the entry and drops its mark, so a
 *       message dead-lettered again while its replay runs is never removed by that replay. Each is
 *       one atomic step and safe to repeat with the same token after a lost reply.
 *   <li>Blank ids throw {@link IllegalArgumentException}.
 *   <li>Retention: {@link #purgeFailedBefore} (age) and {@link #trimTo} (count) remove the oldest
 *       dead letters in bounded steps; {@link io.relaykit.outbox.OutboxRelay} applies both on its
 *       purge schedule.
 * </ul>
 * A backend that cannot do an operation (a broker queue cannot remove an arbitrary message cheaply)
 * says so in its documentation and throws {@link UnsupportedOperationException} with a reason.
 */
public interface DeadLetterStore {

  /**
   * Stores {@code deadLetter}, replacing an entry with the same {@linkplain DeadLetter#id() id}.
   *
   * @param deadLetter the dead letter; not null
   */
  void add(DeadLetter deadLetter);

  /**
   * The dead letter whose {@linkplain DeadLetter#id() id} is {@code id}.
   *
   * @param id the dead letter's id; not blank
   * @return the dead letter, or empty if none has this id
   */
  Optional<DeadLetter> find(String id);

  /**
   * The page of dead letters the query selects.
   *
   * @param query the filters and page
   * @return at most {@code query.limit()} dead letters, in the order {@link DeadLetterQuery} gives
   */
  List<DeadLetter> list(DeadLetterQuery query);

  /**
   * How many dead letters the query's filters select (ignoring paging).
   *
   * @param query the filters; its page is ignored
   * @return the count
   */
  long count(DeadLetterQuery query);

  /**
   * Dead letters per (source, group): how many, and their oldest and newest last failure, ordered
   * by source, then group (no group first); at most {@code maxRows} rows, so a caller that asks
   * for one more than it shows knows whether there are more.
   *
   * <p>The default pages through {@link #list} by keyset position, reading every dead letter once
   * (O(n) reads, O(rows) memory); the database and Redis stores override it with one aggregate
   * read on their indexes.
   *
   * @param maxRows the most rows to return, {@code 1..}{@link DeadLetterQuery#MAX_LIMIT}
   * @return the rows; empty when the store holds no dead letter
   * @throws IllegalArgumentException if {@code maxRows} is out of range
   */
  default List<DeadLetterCount> countBySource(int maxRows) {
    if (maxRows < 1 || maxRows > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(
          "maxRows must be in 1.." + DeadLetterQuery.MAX_LIMIT + ", was " + maxRows);
    }
    Comparator<String> groups = Comparator.nullsFirst(Comparator.naturalOrder());
    Comparator<Map.Entry<String, String>> order =
        Map.Entry.<String, String>comparingByKey().thenComparing(Map.Entry.comparingByValue(groups));
    TreeMap<Map.Entry<String, String>, DeadLetterCount> counts = new TreeMap<>(order);
    DeadLetterQuery page = DeadLetterQuery.all().withPage(0, 1_000);
    while (true) {
      List<DeadLetter> batch = list(page);
      for (DeadLetter d : batch) {
        Instant at = d.lastFailureAt();
        counts.merge(new AbstractMap.SimpleImmutableEntry<>(d.source(), d.group()),
            new DeadLetterCount(d.source(), d.group(), 1, at, at),
            (a, b) -> new DeadLetterCount(a.source(), a.group(), a.count() + 1,
                a.oldestFailureAt().isBefore(at) ? a.oldestFailureAt() : at,
                a.newestFailureAt().isAfter(at) ? a.newestFailureAt() : at));
      }
      if (batch.size() < page.limit()) {
        break;
      }
      page = page.withAfter(DeadLetterQuery.Position.of(batch.get(batch.size() - 1)));
    }
    List<DeadLetterCount> rows = new ArrayList<>(Math.min(counts.size(), maxRows));
    for (DeadLetterCount c : counts.values()) {
      if (rows.size() == maxRows) {
        break;
      }
      rows.add(c);
    }
    return rows;
  }

  /**
   * Removes and returns the dead letter with this id; empty if absent or already removed.
   *
   * @param id the dead letter's id; not blank
   * @return the removed dead letter; each dead letter is returned by at most one call
   */
  Optional<DeadLetter> remove(String id);

  /**
   * Removes every dead letter the query's filters select (ignoring paging); returns how many.
   *
   * @param query the filters; its page is ignored
   * @return how many were removed
   */
  long purge(DeadLetterQuery query);

  /**
   * Retention by age: removes at most {@code max} dead letters whose last failure is before
   * {@code failedBefore}, oldest first, in one short step; call again while it returns {@code
   * max}. Failure times are the failing process's, so {@code failedBefore} is on the caller's
   * clock.
   *
   * <p>The default, for stores written before this method, is {@link #purge} with that time range,
   * which ignores {@code max}; relaykit's stores override it with a bounded step.
   *
   * @param failedBefore the exclusive upper bound of the last failure time
   * @param max the most to remove in this call, {@code >= 1}
   * @return how many it removed
   * @throws IllegalArgumentException on a null time or {@code max} below 1
   */
  default long purgeFailedBefore(Instant failedBefore, int max) {
    if (failedBefore == null) {
      throw new IllegalArgumentException("failedBefore must not be null");
    }
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    return purge(DeadLetterQuery.all().withFailedBetween(null, failedBefore));
  }

  /**
   * Retention by count: removes the oldest dead letters (by last failure, then id) beyond the
   * newest {@code keep}, at most {@code max} of them per call; call again while it returns {@code
   * max}.
   *
   * <p>The default, for stores written before this method, throws {@link
   * UnsupportedOperationException}; relaykit's stores override it.
   *
   * @param keep how many of the newest to keep, {@code >= 0}
   * @param max the most to remove in this call, {@code >= 1}
   * @return how many it removed
   * @throws IllegalArgumentException on a negative {@code keep} or {@code max} below 1
   * @throws UnsupportedOperationException from this default, for a store that cannot trim
   */
  default long trimTo(long keep, int max) {
    throw new UnsupportedOperationException(getClass().getName()
        + " cannot trim dead letters to a count");
  }

  /**
   * Removes at most {@code max} dead letters whose last failure is more than {@code maxAge} ago,
   * oldest first, in one short step; call again while it returns {@code max}. This is what relays
   * call for retention: a store with a clock of its own (the JDBC store's database clock) measures
   * the age on it, so relays on hosts whose clocks disagree purge the same dead letters. The
   * default measures it on {@code now}, the caller's clock ({@link #purgeFailedBefore}).
   *
   * @param maxAge how old a dead letter may get; not negative
   * @param max the most to remove in this call, {@code >= 1}
   * @param now the caller's time, used only by stores without a clock of their own; not null
   * @return how many it removed
   * @throws IllegalArgumentException on a null or negative age, a null {@code now}, or {@code max}
   *     below 1
   */
  default long purgeFailedOlderThan(Duration maxAge, int max, Instant now) {
    if (maxAge == null || maxAge.isNegative()) {
      throw new IllegalArgumentException("maxAge must be a duration >= 0, was " + maxAge);
    }
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
    return purgeFailedBefore(now.minus(maxAge), max);
  }

  /**
   * Whether this store keeps replay marks ({@link #beginReplay}, {@link #finishReplay}, {@link
   * #abandonReplay}), so {@link DeadLetterReplayer} can keep a dead letter until its resend is
   * confirmed. A store without them (a broker queue) answers false, and the replayer takes the
   * dead letter out with {@link #remove} before resending, as documented there.
   *
   * @return true if the replay-mark methods work; false by default
   */
  default boolean marksReplays() {
    return false;
  }

  /**
   * Marks the dead letter {@code id} as being replayed under {@code token} until {@code lease}
   * from now on the store's clock, and returns it; it stays listed, found and counted. Succeeds
   * when it is unmarked, when its mark's lease ran out (a replay that crashed or lost its reply is
   * taken over), or when it already carries {@code token} (a repeat after a lost reply, which
   * renews the lease).
   *
   * @param id the dead letter's id; not blank
   * @param token the replay's token; not blank, at most 64 characters
   * @param lease how long other replays keep off; positive
   * @return the dead letter, now marked; empty if there is none
   * @throws ReplayInProgressException if another token's mark is still live; nothing changes
   * @throws UnsupportedOperationException if the store does not {@linkplain #marksReplays mark}
   */
  default Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no replay marks");
  }

  /**
   * Removes the dead letter {@code id} if it still carries {@code token}'s mark (a replay whose
   * resend was confirmed).
   *
   * @param id the dead letter's id; not blank
   * @param token the token {@link #beginReplay} marked it with; not blank
   * @return true if it was removed; false if it is gone, unmarked, replaced by a newer dead letter
   *     of the same id, or marked by another replay (repeating a call whose reply was lost answers
   *     false: the first call removed it)
   * @throws UnsupportedOperationException if the store does not {@linkplain #marksReplays mark}
   */
  default boolean finishReplay(String id, String token) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no replay marks");
  }

  /**
   * Clears {@code token}'s mark on the dead letter {@code id} (its resend failed), so the next
   * replay may start at once; the dead letter is unchanged otherwise.
   *
   * @param id the dead letter's id; not blank
   * @param token the token {@link #beginReplay} marked it with; not blank
   * @return true if the mark was cleared; false if the dead letter is gone or not marked by it
   * @throws UnsupportedOperationException if the store does not {@linkplain #marksReplays mark}
   */
  default boolean abandonReplay(String id, String token) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no replay marks");
  }
}

package io.relaykit.ordering;

import java.util.OptionalLong;

/**
 * Rejects stale updates: an update to an entity carries a version (an event sequence, an {@code
 * updated_at} in microseconds), and is applied only if that version is newer than the stored one.
 * With a guard, consumers need not see updates in order: an old update that arrives late is
 * dropped instead of overwriting a newer state.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #advance} is an atomic compare-and-set: of concurrent calls, the stored version
 *       only ever grows, and ends at the maximum version offered.
 *   <li>Equal versions are not newer: a redelivered update is rejected the second time.
 *   <li>Blank entity ids and negative versions throw {@link IllegalArgumentException}.
 * </ul>
 *
 * <h2>{@code advance} then apply: the window</h2>
 * {@link #advance} records the version before the caller applies the update. If the update then
 * fails, or {@code advance} committed but its reply was lost, the redelivery is answered "stale"
 * and the update is never applied, though the stored version says it was. Close the window one of
 * two ways:
 * <ul>
 *   <li>Record the version in the same transaction as the update, where the store offers it (the
 *       JDBC guard's {@code advance(Connection, ...)}): both commit or neither does.
 *   <li>{@link #applyIfNewer}: check, apply, then advance. A failure before the advance leaves the
 *       version as it was, so the redelivery applies the update; the cost is a race: two updates of
 *       one entity running at the same time may both pass the check and apply, in either order.
 *       Use it only where one entity's updates run one at a time (key-ordered consumers, one
 *       partition per key) or the update itself compares versions.
 * </ul>
 * Thread-safe.
 */
public interface VersionGuard {

  /**
   * Stores {@code version} for {@code entityId} if it is newer than the stored version (or none is
   * stored).
   *
   * @param entityId the entity; not blank
   * @param version the update's version, {@code >= 0}
   * @return true if the update is newer and was recorded: apply it; false: drop it as stale
   * @throws IllegalArgumentException if {@code entityId} is blank or {@code version} is negative
   */
  boolean advance(String entityId, long version);

  /**
   * The stored version, or empty if the entity has none.
   *
   * @param entityId the entity; not blank
   * @return the highest version {@link #advance} recorded, or empty
   * @throws IllegalArgumentException if {@code entityId} is blank
   */
  OptionalLong current(String entityId);

  /**
   * Applies an update only if its version is newer, recording the version after the update ran
   * (advance-after-effect): {@link #current} is read, {@code effect} runs if {@code version} is
   * newer, then {@link #advance} records it, tried again once if it throws (an advance whose reply
   * was lost then answers false, which is fine: the version is stored).
   *
   * <p>Race: two calls for one entity at once may both see the old version and both run their
   * effect, in either order; see the class comment for when that is acceptable.
   *
   * @param entityId the entity; not blank
   * @param version the update's version, {@code >= 0}
   * @param effect applies the update; what it throws propagates and nothing is recorded
   * @return true if the effect ran; false if the update was stale and nothing ran
   * @throws IllegalArgumentException if {@code entityId} is blank, {@code version} negative or
   *     {@code effect} null
   * @throws RuntimeException what the guard throws recording the version after the effect ran (the
   *     second attempt's error): the update is applied; whether its version was recorded is
   *     unknown, because an advance whose reply was lost did record it. Read {@link #current}: if
   *     it shows the version, a redelivery is answered stale; if not, a redelivery applies the
   *     update again
   */
  default boolean applyIfNewer(String entityId, long version, Runnable effect) {
    if (effect == null) {
      throw new IllegalArgumentException("effect must not be null");
    }
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    OptionalLong stored = current(entityId);
    if (stored.isPresent() && stored.getAsLong() >= version) {
      return false;
    }
    effect.run();
    try {
      advance(entityId, version);
    } catch (RuntimeException first) {
      try {
        advance(entityId, version);
      } catch (RuntimeException second) {
        second.addSuppressed(first);
        throw second;
      }
    }
    return true;
  }
}

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
}

package io.relaykit.ordering;

import io.relaykit.internal.Checks;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The embedded {@link VersionGuard}: the newest version per entity in a concurrent map. O(1) per
 * call, lock-free across entities. Versions are never forgotten, so memory grows with the number
 * of distinct entities; use a durable guard (database, Redis) beyond one process's lifetime.
 */
public final class InMemoryVersionGuard implements VersionGuard {

  /** A guard that has seen no version yet. */
  public InMemoryVersionGuard() {}

  private final ConcurrentHashMap<String, Long> versions = new ConcurrentHashMap<>();

  @Override
  public boolean advance(String entityId, long version) {
    Checks.requireNonBlank("entityId", entityId);
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    boolean[] advanced = new boolean[1];
    versions.compute(entityId, (id, stored) -> {
      if (stored == null || version > stored) {
        advanced[0] = true;
        return version;
      }
      return stored;
    });
    return advanced[0];
  }

  @Override
  public OptionalLong current(String entityId) {
    Checks.requireNonBlank("entityId", entityId);
    Long v = versions.get(entityId);
    return v == null ? OptionalLong.empty() : OptionalLong.of(v);
  }
}

package io.relaykit.storage.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;

/**
 * Instants are stored as BIGINT nanoseconds since the epoch: exact (an {@link Instant} round-trips
 * unchanged), comparable with plain integer SQL, and the same on every database. The range is the
 * years 1678 to 2261.
 */
final class Instants {
  private Instants() {}

  static long toNanos(String field, Instant instant) {
    try {
      return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000_000L),
          instant.getNano());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          field + " must be between the years 1678 and 2261 to be stored, was " + instant, e);
    }
  }

  static Instant fromNanos(long nanos) {
    return Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L),
        Math.floorMod(nanos, 1_000_000_000L));
  }

  static void set(PreparedStatement ps, int index, String field, Instant instant)
      throws SQLException {
    if (instant == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, toNanos(field, instant));
    }
  }

  static Instant get(ResultSet rs, String column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : fromNanos(v);
  }
}

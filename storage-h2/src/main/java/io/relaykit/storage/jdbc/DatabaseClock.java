package io.relaykit.storage.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;

/**
 * Where the JDBC stores read "now" for every decision that several hosts share: whether a lease
 * ran out and its row may be taken over, whether a row is ready, whether a kept row or key has
 * outlived its retention. With {@link #database()} (the default) that is the database server's
 * clock, read inside each statement, so a host whose clock runs 31 s fast cannot take a fresh
 * lease and a host 8 days fast cannot purge live keys: hosts never compare their own clocks.
 * {@link #of(InstantSource)} uses an injected clock instead; it exists for tests, which must drive
 * time, and for single-host deployments that want the application's clock.
 *
 * <h2>In SQL</h2>
 * Statements take "now" from {@link #nowNanos(Dialect)}: an SQL expression of the current time as
 * BIGINT nanoseconds since the epoch, the unit relaykit stores instants in. On PostgreSQL it is
 * {@code clock_timestamp()} (not {@code now()}, which is fixed for a whole transaction, and
 * {@code runOnce} runs inside the caller's); on H2, whose {@code CURRENT_TIMESTAMP} is fixed per
 * transaction as well, it is the function {@code RELAYKIT_CLOCK_MILLIS()} that schema version 3
 * creates, which reads {@link System#currentTimeMillis()} in the JVM that hosts the database (the
 * server's, in H2's server and AUTO_SERVER modes), to the millisecond. For an injected clock the
 * expression is a parameter ({@code CAST(? AS BIGINT)}) that {@link #bind} fills: callers bind with {@code bind}
 * wherever they used the expression, in order, and it binds nothing for the database's clock.
 *
 * <p>Reading the database's clock from Java ({@link #now(Connection, Dialect)}) costs one round
 * trip; statements that embed the expression cost nothing extra.
 */
public abstract sealed class DatabaseClock {

  private static final DatabaseClock DATABASE = new Server();

  private DatabaseClock() {}

  /**
   * The database server's clock, read inside each statement. The default.
   *
   * @return the shared instance
   */
  public static DatabaseClock database() {
    return DATABASE;
  }

  /**
   * The injected {@code clock}, bound into each statement as a parameter: for tests (a fake clock
   * the contract kits move) and for single-host deployments.
   *
   * @param clock the clock every statement takes "now" from
   * @return a clock bound into each statement as a parameter
   * @throws NullPointerException if {@code clock} is null
   */
  public static DatabaseClock of(InstantSource clock) {
    return new Injected(Objects.requireNonNull(clock, "clock"));
  }

  /**
   * An SQL expression of the current time as BIGINT nanoseconds since the epoch; one parameter
   * when the clock is injected (then bind it with {@link #bind}).
   */
  abstract String nowNanos(Dialect dialect);

  /**
   * Binds "now" at {@code index} when {@link #nowNanos} is a parameter; returns the next free
   * parameter index ({@code index} itself when nothing was bound).
   */
  abstract int bind(PreparedStatement ps, int index) throws SQLException;

  /** Whether {@link #nowNanos} is a parameter that {@link #bind} must fill. */
  abstract boolean isParameter();

  /** The current time on this clock, read through {@code c} (one round trip for the database's). */
  abstract Instant now(Connection c, Dialect dialect) throws SQLException;

  private static final class Server extends DatabaseClock {
    @Override
    String nowNanos(Dialect dialect) {
      return dialect == Dialect.POSTGRESQL
          ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT)"
          : "(RELAYKIT_CLOCK_MILLIS() * 1000000)";
    }

    @Override
    int bind(PreparedStatement ps, int index) {
      return index;
    }

    @Override
    boolean isParameter() {
      return false;
    }

    @Override
    Instant now(Connection c, Dialect dialect) throws SQLException {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT " + nowNanos(dialect))) {
        rs.next();
        return Instants.fromNanos(rs.getLong(1));
      }
    }

    @Override
    public String toString() {
      return "DatabaseClock.database()";
    }
  }

  private static final class Injected extends DatabaseClock {
    private final InstantSource clock;

    Injected(InstantSource clock) {
      this.clock = clock;
    }

    @Override
    String nowNanos(Dialect dialect) {
      // Typed, so arithmetic on it ("now + lease") is BIGINT on H2 too, which types a bare
      // parameter in an expression as INT.
      return "CAST(? AS BIGINT)";
    }

    @Override
    int bind(PreparedStatement ps, int index) throws SQLException {
      ps.setLong(index, Instants.toNanos("now", clock.instant()));
      return index + 1;
    }

    @Override
    boolean isParameter() {
      return true;
    }

    @Override
    Instant now(Connection c, Dialect dialect) {
      return clock.instant();
    }

    @Override
    public String toString() {
      return "DatabaseClock.of(" + clock + ")";
    }
  }
}

package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The database's clock in SQL, and the injected clock as a parameter. */
class DatabaseClockTest {

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("the database's clock is the server's time in nanoseconds, and moves inside one"
      + " transaction (unlike now() and CURRENT_TIMESTAMP)")
  void databaseClockMovesInsideATransaction(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = TestDatabase.shared(kind);
    db.storage(new FakeClock()); // migrates: H2 needs the schema's clock function
    DatabaseClock clock = DatabaseClock.database();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Instant before = Instant.now();
      long first = read(c, clock, db.dialect());
      Instant firstRead = clock.now(c, db.dialect());
      long end = System.nanoTime() + Duration.ofMillis(20).toNanos();
      io.relaykit.tck.Await.until(Duration.ofSeconds(5), "20 ms to pass",
          () -> System.nanoTime() - end >= 0);
      long second = read(c, clock, db.dialect());
      c.commit();
      assertThat(Instants.fromNanos(first)).isBetween(before.minusSeconds(5),
          Instant.now().plusSeconds(5));
      assertThat(firstRead).isAfterOrEqualTo(Instants.fromNanos(first).minusMillis(1));
      assertThat(second - first).as("nanoseconds between two reads in one transaction")
          .isGreaterThanOrEqualTo(Duration.ofMillis(15).toNanos());
    }
    assertThat(clock.isParameter()).isFalse();
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("an injected clock is a parameter bound with its time")
  void injectedClockIsAParameter(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    FakeClock fake = new FakeClock();
    fake.advance(Duration.ofDays(3000));
    DatabaseClock clock = DatabaseClock.of(fake);
    try (Connection c = db.connection()) {
      assertThat(read(c, clock, db.dialect())).isEqualTo(Instants.toNanos("now", fake.instant()));
      assertThat(clock.now(c, db.dialect())).isEqualTo(fake.instant());
    }
    assertThat(clock.isParameter()).isTrue();
    assertThat(clock.nowNanos(db.dialect())).contains("?");
  }

  private static long read(Connection c, DatabaseClock clock, Dialect dialect)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT " + clock.nowNanos(dialect) + " + 0")) {
      clock.bind(ps, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}

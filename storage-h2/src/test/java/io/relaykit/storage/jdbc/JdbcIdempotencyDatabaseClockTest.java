package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.RunOnceResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The idempotency store on the database server's own clock ({@link DatabaseClock#database()}), with
 * hosts whose clocks are wrong: leases and retention follow the database, not the host. On H2 and
 * PostgreSQL. (The kit's "one clock" cases check the same rules on an injected database clock.)
 */
class JdbcIdempotencyDatabaseClockTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofDays(7);

  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.shared(TestDatabase.Kind.H2_MEMORY),
        TestDatabase.shared(TestDatabase.Kind.POSTGRESQL));
  }

  private static JdbcIdempotencyStore host(TestDatabase db, String prefix, Duration skew) {
    return db.storageOnDatabaseClock(prefix, RETENTION,
        InstantSource.offset(InstantSource.system(), skew)).idempotencyStore();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a host 31 s fast cannot take a fresh claim; the lease is dated by the database")
  void fastHostCannotTakeFreshClaim(TestDatabase db) {
    String prefix = TestDatabase.newPrefix();
    JdbcIdempotencyStore honest = host(db, prefix, Duration.ZERO);
    JdbcIdempotencyStore fast = host(db, prefix, Duration.ofSeconds(31));

    Instant before = Instant.now();
    Claim holder = honest.claim("order-1:sms", LEASE);
    Claim other = fast.claim("order-1:sms", LEASE);

    assertThat(other.status()).isEqualTo(Claim.Status.IN_PROGRESS);
    assertThat(holder.leaseExpiresAt()).isBetween(before.plus(LEASE).minusSeconds(5),
        Instant.now().plus(LEASE).plusSeconds(5));
    Claim fastClaim = fast.claim("order-2:sms", LEASE);
    assertThat(fastClaim.leaseExpiresAt())
        .as("a fast host's lease runs from the database's now, not the host's")
        .isBefore(Instant.now().plus(LEASE).plusSeconds(5));
    assertThat(honest.complete(holder)).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a host 8 days fast purges no DONE key and runs no done work again, even inside"
      + " one long transaction")
  void fastHostKeepsDoneKeys(TestDatabase db) throws SQLException {
    String prefix = TestDatabase.newPrefix();
    JdbcIdempotencyStore honest = host(db, prefix, Duration.ZERO);
    JdbcIdempotencyStore fast = host(db, prefix, Duration.ofDays(8));
    Claim c = honest.claim("order-1:sms", LEASE);
    assertThat(honest.complete(c)).isTrue();

    assertThat(fast.purgeExpired()).isZero();
    assertThat(fast.claim("order-1:sms", LEASE).status()).isEqualTo(Claim.Status.DONE);
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(fast.tryRunOnce(tx, "order-1:sms", x -> { }))
          .isEqualTo(RunOnceResult.ALREADY_DONE);
      tx.commit();
    }
    assertThat(honest.status("order-1:sms")).contains(Claim.Status.DONE);
  }
}

package io.relaykit.storage.jdbc;

import io.relaykit.ordering.VersionGuard;
import io.relaykit.tck.VersionGuardContract;
import java.time.Duration;
import java.time.InstantSource;

/** VersionGuardContract on PostgreSQL. */
class PostgresVersionGuardTest extends VersionGuardContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);

  @Override
  protected VersionGuard createGuard() {
    return db.emptied(PREFIX, Duration.ofDays(7), InstantSource.system()).versionGuard();
  }
}

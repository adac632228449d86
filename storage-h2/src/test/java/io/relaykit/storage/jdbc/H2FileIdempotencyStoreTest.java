package io.relaykit.storage.jdbc;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;

/** IdempotencyStoreContract on an H2 file database. */
class H2FileIdempotencyStoreTest extends IdempotencyStoreContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_FILE);

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    return db.emptied(PREFIX, retention, clock).idempotencyStore();
  }

  @Override
  protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
    return Optional.of(db.storageOnHost(PREFIX, retention(), hostClock,
        DatabaseClock.of(clock())).idempotencyStore());
  }
}

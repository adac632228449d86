package io.relaykit.storage.jdbc;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;

/** IdempotencyStoreContract on H2 in memory. */
class H2MemoryIdempotencyStoreTest extends IdempotencyStoreContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY);

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

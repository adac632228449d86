package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * One store the dead-letter endpoint lists: its name (as in the listing's {@code store}), the
 * store itself (opened on first use, again after an open that failed), how a dead letter of it is
 * replayed, and why it refuses a purge (null when it removes single dead letters). Thread-safe.
 */
final class DeadLetterSource implements AutoCloseable {

  private final String name;
  private final Supplier<? extends DeadLetterStore> opener;
  private final BiFunction<DeadLetterStore, String, Optional<DeadLetter>> replay;
  private final String purgeRefusal;
  private final String retention;
  private final boolean owned;
  private DeadLetterStore store;

  private DeadLetterSource(String name, Supplier<? extends DeadLetterStore> opener,
      BiFunction<DeadLetterStore, String, Optional<DeadLetter>> replay, String purgeRefusal,
      String retention, boolean owned) {
    this.name = Objects.requireNonNull(name, "name");
    this.opener = Objects.requireNonNull(opener, "opener");
    this.replay = Objects.requireNonNull(replay, "replay");
    this.purgeRefusal = purgeRefusal;
    this.retention = retention;
    this.owned = owned;
  }

  /** The application's store, which this source never closes. */
  static DeadLetterSource shared(String name, DeadLetterStore store,
      RelaykitDeadLettersEndpoint.Replay replay) {
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(replay, "replay");
    return new DeadLetterSource(name, () -> store, (s, id) -> replay.replay(id), null, null,
        false);
  }

  /**
   * A store this source opens on first use and closes with {@link #close()}.
   *
   * @param purgeRefusal why a purge is refused, or null when the store removes single entries
   * @param retention who ages its dead letters out when not relaykit, or null
   */
  static <S extends DeadLetterStore> DeadLetterSource owned(String name, Supplier<S> opener,
      BiFunction<S, String, Optional<DeadLetter>> replay, String purgeRefusal, String retention) {
    @SuppressWarnings("unchecked")
    BiFunction<DeadLetterStore, String, Optional<DeadLetter>> r =
        (s, id) -> replay.apply((S) s, id);
    return new DeadLetterSource(name, opener, r, purgeRefusal, retention, true);
  }

  String name() {
    return name;
  }

  /** The store, opened now if it is not yet; what the open throws, if it fails. */
  synchronized DeadLetterStore store() {
    if (store == null) {
      store = Objects.requireNonNull(opener.get(), "opened store");
    }
    return store;
  }

  Optional<DeadLetter> replay(String id) {
    return replay.apply(store(), id);
  }

  /** Why this store refuses a purge; null when it removes single dead letters. */
  String purgeRefusal() {
    return purgeRefusal;
  }

  /** Who ages this store's dead letters out, when not relaykit; null otherwise. */
  String retention() {
    return retention;
  }

  @Override
  public synchronized void close() {
    if (owned && store instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        // closing anyway: the store's clients are released with the context
      }
    }
    store = null;
  }
}

package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterCount;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
  /** Ids being replayed through an owned store now; at most one per calling thread. */
  private final Set<String> replaying = ConcurrentHashMap.newKeySet();
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

  /**
   * This source's store as a {@link DeadLetterStore} that opens it on each call's first use (and
   * again after an open that failed): what the operator console reads, so a broker that is down
   * when the console is built costs a failed page, not a failed start. Every call, the default
   * methods included, goes to the opened store as it is.
   */
  DeadLetterStore opensOnUse() {
    return new OpensOnUse();
  }

  /**
   * Replays one dead letter through this source's store. For a store this source opened (a Kafka
   * topic, a RabbitMQ queue: no replay marks), one replay of an id at a time in this application,
   * whichever caller asks (the endpoint, the console): a second one meanwhile is refused.
   *
   * @param id the dead letter's id
   * @return the replayed dead letter, or empty when there is none
   * @throws ReplayInProgressException while another replay of {@code id} through this source
   *     runs in this application (nothing is resent)
   */
  Optional<DeadLetter> replay(String id) {
    if (!owned) {
      return replay.apply(store(), id);
    }
    if (!replaying.add(id)) {
      throw new ReplayInProgressException(id, null);
    }
    try {
      return replay.apply(store(), id);
    } finally {
      replaying.remove(id);
    }
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

  /** Forwards every call to {@link #store()}. */
  private final class OpensOnUse implements DeadLetterStore {
    @Override
    public void add(DeadLetter deadLetter) {
      store().add(deadLetter);
    }

    @Override
    public Optional<DeadLetter> find(String id) {
      return store().find(id);
    }

    @Override
    public List<DeadLetter> list(DeadLetterQuery query) {
      return store().list(query);
    }

    @Override
    public long count(DeadLetterQuery query) {
      return store().count(query);
    }

    @Override
    public List<DeadLetterCount> countBySource(int maxRows) {
      return store().countBySource(maxRows);
    }

    @Override
    public Optional<DeadLetter> remove(String id) {
      return store().remove(id);
    }

    @Override
    public long purge(DeadLetterQuery query) {
      return store().purge(query);
    }

    @Override
    public long purgeFailedBefore(Instant failedBefore, int max) {
      return store().purgeFailedBefore(failedBefore, max);
    }

    @Override
    public long trimTo(long keep, int max) {
      return store().trimTo(keep, max);
    }

    @Override
    public long purgeFailedOlderThan(Duration maxAge, int max, Instant now) {
      return store().purgeFailedOlderThan(maxAge, max, now);
    }

    @Override
    public boolean marksReplays() {
      return store().marksReplays();
    }

    @Override
    public Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
      return store().beginReplay(id, token, lease);
    }

    @Override
    public boolean finishReplay(String id, String token) {
      return store().finishReplay(id, token);
    }

    @Override
    public boolean abandonReplay(String id, String token) {
      return store().abandonReplay(id, token);
    }

    @Override
    public String toString() {
      return "DeadLetterStore[" + name + ", opened on use]";
    }
  }
}

package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetterStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Every dead-letter store of the application, relaykit's own first, then the broker stores of
 * the listeners' subscriptions ({@link BrokerDeadLetterStores}), asked for at each call: what the
 * dead-letter endpoint and the operator console list, replay and purge. Thread-safe; a call costs
 * what the broker supplier costs (a map lookup per subscription once the stores exist).
 */
final class DeadLetterSources {

  private final DeadLetterSource relaykit;
  private final Supplier<List<DeadLetterSource>> brokers;

  /**
   * The stores of an application.
   *
   * @param store relaykit's own store, named {@link RelaykitDeadLettersEndpoint#RELAYKIT_STORE}
   * @param replay how one of its dead letters is replayed
   * @param brokers the broker stores, asked at each call
   * @throws NullPointerException if an argument is null
   */
  DeadLetterSources(DeadLetterStore store, RelaykitDeadLettersEndpoint.Replay replay,
      Supplier<List<DeadLetterSource>> brokers) {
    this.relaykit = DeadLetterSource.shared(RelaykitDeadLettersEndpoint.RELAYKIT_STORE, store,
        replay);
    this.brokers = Objects.requireNonNull(brokers, "brokers");
  }

  /** relaykit's own store. */
  DeadLetterSource relaykit() {
    return relaykit;
  }

  /**
   * Every store, relaykit's first.
   *
   * @return the stores now
   * @throws RuntimeException what finding the broker stores throws
   */
  List<DeadLetterSource> all() {
    List<DeadLetterSource> all = new ArrayList<>();
    all.add(relaykit);
    all.addAll(brokers.get());
    return all;
  }

  /**
   * Every store, or the one {@code store} names.
   *
   * @param store a store's name, as listed, or null for all
   * @return the stores
   * @throws IllegalArgumentException naming the known stores when none has that name
   */
  List<DeadLetterSource> select(String store) {
    List<DeadLetterSource> all = all();
    if (store == null) {
      return all;
    }
    List<String> names = new ArrayList<>();
    for (DeadLetterSource s : all) {
      if (s.name().equals(store)) {
        return List.of(s);
      }
      names.add(s.name());
    }
    throw new IllegalArgumentException("store must be one of " + names + ", was '" + store + "'");
  }
}

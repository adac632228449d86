package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * {@link IdempotentAnswerStore} in one JVM's memory: for tests, the in-memory deployment and
 * single-process services. Answers are forgotten after the retention (on the injected clock) and,
 * past {@code maxAnswers}, oldest first; {@link #evicted()} counts the answers forgotten early.
 * Lost with the process.
 *
 * <p>Thread-safe (one lock); find and save are O(1) amortized (expired answers are dropped from the
 * oldest end as they are met).
 */
public final class InMemoryIdempotentAnswerStore implements IdempotentAnswerStore {

  private final InstantSource clock;
  private final Duration retention;
  private final int maxAnswers;
  private final LinkedHashMap<String, Kept> answers = new LinkedHashMap<>();
  private long evicted;

  private record Kept(IdempotentAnswer answer, Instant until) {}

  /**
   * An empty store.
   *
   * @param clock the clock retention is measured on
   * @param retention how long an answer is kept; positive (match the idempotency store's)
   * @param maxAnswers the most answers kept; positive
   * @throws NullPointerException if {@code clock} or {@code retention} is null
   * @throws IllegalArgumentException if {@code retention} or {@code maxAnswers} is not positive
   */
  public InMemoryIdempotentAnswerStore(InstantSource clock, Duration retention, int maxAnswers) {
    this.clock = Checks.requireNonNull("clock", clock);
    this.retention = Checks.requirePositive("retention", retention);
    this.maxAnswers = Checks.requirePositive("maxAnswers", maxAnswers);
  }

  @Override
  public synchronized Optional<IdempotentAnswer> find(String key) {
    Instant now = clock.instant();
    forgetExpired(now);
    Kept k = answers.get(key);
    return k == null || !k.until.isAfter(now) ? Optional.empty() : Optional.of(k.answer);
  }

  @Override
  public synchronized void save(String key, IdempotentAnswer answer) {
    Checks.requireNonBlank("key", key);
    Checks.requireNonNull("answer", answer);
    Instant now = clock.instant();
    forgetExpired(now);
    answers.remove(key);
    answers.put(key, new Kept(answer, now.plus(retention)));
    while (answers.size() > maxAnswers) {
      Iterator<Map.Entry<String, Kept>> it = answers.entrySet().iterator();
      it.next();
      it.remove();
      evicted++;
    }
  }

  /**
   * Answers forgotten before their retention ended because the store was full.
   *
   * @return the count since creation
   */
  public synchronized long evicted() {
    return evicted;
  }

  /**
   * Answers kept now (expired ones may still be counted until they are met).
   *
   * @return the number of answers held
   */
  public synchronized int size() {
    return answers.size();
  }

  private void forgetExpired(Instant now) {
    Iterator<Kept> it = answers.values().iterator();
    while (it.hasNext()) {
      if (it.next().until.isAfter(now)) {
        return; // insertion order is expiry order: one retention for all
      }
      it.remove();
    }
  }
}

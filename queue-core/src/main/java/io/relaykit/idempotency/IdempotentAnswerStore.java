package io.relaykit.idempotency;

import java.util.Optional;

/**
 * Where {@link IdempotencyKeyProtocol} keeps first answers by client key. The protocol saves an
 * answer before it completes the key's claim, so a key that is DONE normally has its answer here;
 * one whose answer is gone (expired, or its save failed) is answered "processed, answer not kept".
 *
 * <p>Implementations are thread-safe, bound what they keep (by count, size or retention) and say
 * how; a backend that fails throws an unchecked exception naming the operation. The key given is
 * the validated client key; one store serves one protocol (one namespace).
 */
public interface IdempotentAnswerStore {

  /**
   * The answer kept for {@code key}, if any.
   *
   * @param key the client's key
   * @return the answer, or empty if none is kept (never saved, expired, evicted)
   * @throws RuntimeException if the backend cannot be read
   */
  Optional<IdempotentAnswer> find(String key);

  /**
   * Keeps {@code answer} for {@code key}; a later save for the same key replaces it (the
   * protocol saves once per claim).
   *
   * @param key the client's key
   * @param answer the first answer
   * @throws RuntimeException if the backend cannot be written
   */
  void save(String key, IdempotentAnswer answer);
}

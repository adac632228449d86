package io.relaykit.tck;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The lost-reply fault, as a store seam: a store whose next call of one method reaches the real
 * store and completes there (the write commits), and whose answer is then dropped, so the caller
 * sees a {@link LostReplyException} instead. It is the same fault as a network reply dropped by
 * {@link FaultProxy#dropReplies()} (a PostgreSQL commit or a Redis script that ran), made exact
 * and instant for embedded and in-memory stores, and usable on every backend a kit runs on.
 *
 * <p>The contract kits apply it to every write operation of a store in turn and check one of three
 * outcomes ({@link Outcome}) by the model of what the store holds afterwards.
 *
 * @param <T> the store interface
 */
public final class LostReply<T> {

  /** What a write whose reply was lost left behind, as the caller can learn it. */
  public enum Outcome {
    /** The write happened, and the store shows it (the caller can read that it did). */
    DONE,
    /** The write had no effect the caller must act on (nothing changed, or it undoes itself). */
    NOT_DONE,
    /**
     * The caller cannot tell, and repeating the call is safe: the repeat converges on the state of
     * one successful call (no twin, nothing lost).
     */
    UNKNOWN_SAFE_TO_RETRY
  }

  /** The answer a caller sees instead of the store's reply. */
  public static final class LostReplyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    LostReplyException(String method) {
      super("the reply to " + method + " was lost (the call completed on the store)");
    }
  }

  private final T store;
  private final AtomicReference<String> armed = new AtomicReference<>();
  private final AtomicInteger dropped = new AtomicInteger();

  private LostReply(Class<T> type, T real) {
    Objects.requireNonNull(real, "real");
    this.store = type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
        (proxy, method, args) -> {
          Object result;
          // A default method the store does not override runs on this proxy, so the calls it
          // makes (applyIfNewer's advance) pass the seam too.
          if (method.isDefault() && real.getClass()
              .getMethod(method.getName(), method.getParameterTypes()).isDefault()) {
            result = InvocationHandler.invokeDefault(proxy, method, args);
          } else {
            try {
              result = method.invoke(real, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          }
          if (armed.compareAndSet(method.getName(), null)) {
            dropped.incrementAndGet();
            throw new LostReplyException(method.getName());
          }
          return result;
        }));
  }

  /**
   * A seam over {@code real}: its {@link #store()} forwards every call.
   *
   * @param <T> the store interface
   * @param type the store interface
   * @param real the store that really runs the calls
   * @return the seam, disarmed
   */
  public static <T> LostReply<T> over(Class<T> type, T real) {
    return new LostReply<>(type, real);
  }

  /**
   * The store to call: it forwards to the real store and drops the armed reply.
   *
   * @return the forwarding store
   */
  public T store() {
    return store;
  }

  /**
   * Drops the reply of the next call of the method named {@code method} (any overload): the call
   * runs on the real store, then throws {@link LostReplyException}.
   *
   * @param method the method's name
   * @return this seam
   */
  public LostReply<T> dropNextReplyOf(String method) {
    armed.set(Objects.requireNonNull(method, "method"));
    return this;
  }

  /**
   * How many replies were dropped; a case checks it was 1, so a test cannot pass by never
   * reaching the armed call.
   *
   * @return the count
   */
  public int dropped() {
    return dropped.get();
  }
}

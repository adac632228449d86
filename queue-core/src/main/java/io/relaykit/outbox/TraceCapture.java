package io.relaykit.outbox;

import io.relaykit.message.Message;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Captures the caller's W3C trace context when a message is appended to an outbox: the one step
 * every {@link OutboxStore} backend runs on its append path ({@code InMemoryOutboxStore.append},
 * {@code JdbcOutboxStore.append} and {@code appendAll}), so the captured context travels with the
 * row through the relay and the broker to the consumer.
 *
 * <p>Rules: a message that already has a {@value TraceContext#TRACEPARENT} header keeps it (an
 * explicit context wins, even a malformed one, which stays the caller's to fix); otherwise {@link
 * TracePropagation#current()} is asked once and its context, when present, is set on the message
 * (its trace id becomes the message's). A {@link TracePropagation} that throws (or returns null)
 * never fails the append: the message is stored as it came, the failure is counted in {@link
 * #failures()} and logged once per capture through {@link System.Logger}.
 *
 * <p>Thread-safe. Cost per append: one call of {@code current()} and, when it returns a context,
 * one copy of the message's headers.
 */
public final class TraceCapture {
  private static final System.Logger LOG = System.getLogger(TraceCapture.class.getName());

  private final TracePropagation propagation;
  private final AtomicLong captured = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();

  private TraceCapture(TracePropagation propagation) {
    this.propagation = propagation;
  }

  /**
   * A capture asking {@code propagation}.
   *
   * @param propagation the propagation to ask at each append
   * @return a new capture with zero counts
   * @throws NullPointerException if {@code propagation} is null
   */
  public static TraceCapture of(TracePropagation propagation) {
    return new TraceCapture(Objects.requireNonNull(propagation, "propagation"));
  }

  /**
   * A capture asking {@link TracePropagation#discovered()}: what stores use unless told.
   *
   * @return a new capture with zero counts
   */
  public static TraceCapture discovered() {
    return of(TracePropagation.discovered());
  }

  /**
   * The propagation this capture asks.
   *
   * @return the propagation
   */
  public TracePropagation propagation() {
    return propagation;
  }

  /**
   * {@code message} with the caller's current context when it carries none of its own, else
   * {@code message} itself. Never throws for what the propagation does.
   *
   * @param message the message being appended
   * @return the message to store
   * @throws NullPointerException if {@code message} is null
   */
  public Message stamp(Message message) {
    Objects.requireNonNull(message, "message");
    if (message.headers().containsKey(TraceContext.TRACEPARENT)) {
      return message;
    }
    Optional<TraceContext> current;
    try {
      current = propagation.current();
      if (current == null) {
        throw new NullPointerException(propagation.getClass().getName()
            + ".current() returned null");
      }
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      if (failures.getAndIncrement() == 0) {
        LOG.log(System.Logger.Level.WARNING, "trace propagation " + propagation.getClass()
            .getName() + " failed at an outbox append; the message is stored without a context"
            + " (counted in TraceCapture.failures(), not logged again)", e);
      }
      return message;
    }
    if (current.isEmpty()) {
      return message;
    }
    captured.incrementAndGet();
    return message.toBuilder().traceContext(current.get()).build();
  }

  /**
   * Appends whose message got the caller's context.
   *
   * @return the count since this capture was made
   */
  public long captured() {
    return captured.get();
  }

  /**
   * Appends at which the propagation threw or returned null (the message kept no context).
   *
   * @return the count since this capture was made
   */
  public long failures() {
    return failures.get();
  }

  @Override
  public String toString() {
    return "TraceCapture[" + propagation + ", captured=" + captured() + ", failures="
        + failures() + "]";
  }
}

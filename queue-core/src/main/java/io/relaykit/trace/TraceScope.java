package io.relaykit.trace;

import java.util.Objects;
import java.util.Optional;

/**
 * A span a {@link TracePropagation} opened around a publish or a handler call. relaykit calls
 * {@link #failed} (at most once) when the work failed, then {@link #close} exactly once.
 */
public interface TraceScope extends AutoCloseable {

  /**
   * The context the work goes on under: for a publish, what the message carries on the wire (the
   * producer span's context); for a handler, the consumer span's. Empty for none.
   *
   * @return the scope's context; never null
   */
  Optional<TraceContext> context();

  /**
   * The work failed with {@code error}; the default ignores it.
   *
   * @param error what the work threw, or how the publish failed
   */
  default void failed(Throwable error) {}

  /** Ends the span; must not throw. */
  @Override
  void close();

  /**
   * A scope that opens nothing and keeps {@code context}.
   *
   * @param context the context it names; not null
   * @return the scope
   */
  static TraceScope unchanged(Optional<TraceContext> context) {
    Objects.requireNonNull(context, "context");
    return new TraceScope() {
      @Override
      public Optional<TraceContext> context() {
        return context;
      }

      @Override
      public void close() {}
    };
  }
}

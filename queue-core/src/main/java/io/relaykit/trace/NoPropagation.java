package io.relaykit.trace;

import java.util.Optional;
import java.util.function.Supplier;

/** {@link TracePropagation#none()}, and the process-wide discovered instance. */
final class NoPropagation implements TracePropagation {
  static final NoPropagation INSTANCE = new NoPropagation();

  /** Found on first use, then kept: the class-path scan runs once. */
  static final Supplier<TracePropagation> DISCOVERED = new Supplier<>() {
    private volatile TracePropagation found;

    @Override
    public TracePropagation get() {
      TracePropagation p = found;
      if (p == null) {
        synchronized (this) {
          p = found;
          if (p == null) {
            p = TracePropagation.discover(TracePropagation.class.getClassLoader());
            found = p;
          }
        }
      }
      return p;
    }
  };

  private NoPropagation() {}

  @Override
  public Optional<TraceContext> current() {
    return Optional.empty();
  }

  @Override
  public String toString() {
    return "TracePropagation.none()";
  }
}

package io.relaykit.monitor;

/** Holds {@link MetricsListener#noop()}'s one instance. */
final class NoopMetrics {
  static final MetricsListener INSTANCE = new MetricsListener() {
    @Override
    public String toString() {
      return "MetricsListener.noop()";
    }
  };

  private NoopMetrics() {}
}

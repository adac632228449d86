package io.relaykit.chaos;

import io.relaykit.tck.FaultProxy;
import java.time.Duration;
import java.util.Map;

/**
 * {@code partition}: breaks the TCP path between the demo instances and one service, through the
 * {@link FaultProxy} they reach it by, for the event's length, then heals it:
 * {@code cut} resets every open connection (an instant), {@code refuse} resets them and refuses
 * new ones (the server went away), {@code blackhole} accepts and never answers, {@code latency}
 * delays every chunk by {@link #LATENCY}. The real server is never touched.
 */
final class PartitionFault implements Fault {
  static final Duration LATENCY = Duration.ofMillis(300);
  private final Map<String, FaultProxy> proxies;

  PartitionFault(Map<String, FaultProxy> proxies) {
    this.proxies = proxies;
  }

  @Override
  public String name() {
    return "partition";
  }

  @Override
  public String inject(FaultSchedule.Event event) {
    FaultProxy proxy = proxies.get(event.target());
    if (proxy == null) {
      throw new IllegalStateException("no proxy for " + event.target());
    }
    switch (event.mode()) {
      case "cut" -> {
        int open = proxy.openConnections();
        proxy.cutConnections();
        return "cut " + open + " connections to " + event.target();
      }
      case "refuse" -> {
        proxy.refuseConnections();
        proxy.cutConnections();
      }
      case "blackhole" -> proxy.blackhole();
      case "latency" -> proxy.latency(LATENCY);
      default -> throw new IllegalArgumentException("unknown mode " + event.mode());
    }
    try {
      // The fault's length is what was asked for: hold it that long, then heal.
      Fault.holdFor(event);
    } finally {
      proxy.heal();
    }
    return event.mode() + " " + event.target() + " for " + event.lengthMs() + " ms";
  }
}

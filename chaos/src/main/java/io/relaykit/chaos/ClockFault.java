package io.relaykit.chaos;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code clock}: one demo instance runs with its wall clock skewed from outside the process
 * (libfaketime through {@code LD_PRELOAD}) for the event's length: it is killed, restarted with
 * the skew, left to work with it, then killed and restarted with the true clock. A clock ahead
 * sees the other instances' outbox leases and idempotency claims as expired early; a clock behind
 * holds its own for longer. The skew is {@link #SKEW} ahead or behind, chosen by the seed.
 */
final class ClockFault implements Fault {
  static final Duration SKEW = Duration.ofSeconds(31);
  private final List<DemoInstance> instances;
  private final Function<Duration, Map<String, String>> skewEnvironment;

  /**
   * @param skewEnvironment the environment that starts a JVM with its clock this far off
   */
  ClockFault(List<DemoInstance> instances,
      Function<Duration, Map<String, String>> skewEnvironment) {
    this.instances = instances;
    this.skewEnvironment = skewEnvironment;
  }

  @Override
  public String name() {
    return "clock";
  }

  @Override
  public String inject(FaultSchedule.Event event) throws Exception {
    DemoInstance d = instances.get(Integer.parseInt(event.target()));
    Duration skew = event.pick() >= 0 ? SKEW : SKEW.negated();
    d.kill();
    d.start(skewEnvironment.apply(skew));
    long skewedPid = d.pid();
    try {
      Fault.holdFor(event);
    } finally {
      d.kill();
      d.start();
    }
    return "instance " + event.target() + " ran " + (skew.isNegative() ? "" : "+")
        + skew.toSeconds() + " s off for " + event.lengthMs() + " ms (pid " + skewedPid
        + "), restarted with the true clock as pid " + d.pid();
  }
}

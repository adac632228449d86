package io.relaykit.chaos;

import java.util.List;

/**
 * {@code kill}: kill -9 of one demo instance (the JVM and any descendant), then a restart on the
 * same port and data; the fault is over once the new process listens. Whatever the instance was
 * doing (an append, a relay batch, a handler call) is cut at that moment.
 */
final class KillFault implements Fault {
  private final List<DemoInstance> instances;

  KillFault(List<DemoInstance> instances) {
    this.instances = instances;
  }

  @Override
  public String name() {
    return "kill";
  }

  @Override
  public String inject(FaultSchedule.Event event) throws Exception {
    DemoInstance d = instances.get(Integer.parseInt(event.target()));
    long pid = d.pid();
    d.kill();
    d.start();
    return "kill -9 pid " + pid + ", restarted as pid " + d.pid();
  }
}

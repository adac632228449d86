package io.relaykit.chaos;

/**
 * {@code broker-kill}: kill -9 of the broker process the run started (the launcher's own
 * single-node Kafka broker), then a restart on the same data directory and ports; the fault is over
 * once the broker answers again. Clients reach it through a proxy whose port the broker
 * advertises, so they reconnect on their own.
 */
final class BrokerKillFault implements Fault {

  /** The broker as the fault needs it. */
  interface Broker {
    long pid();

    /** kill -9, and waits until the process has exited. */
    void kill();

    /** Starts it again on the same data and ports, and waits until it answers. */
    void restart();
  }

  private final Broker broker;

  BrokerKillFault(Broker broker) {
    this.broker = broker;
  }

  @Override
  public String name() {
    return "broker-kill";
  }

  @Override
  public String inject(FaultSchedule.Event event) {
    long pid = broker.pid();
    broker.kill();
    broker.restart();
    return "kill -9 broker pid " + pid + ", restarted as pid " + broker.pid();
  }
}

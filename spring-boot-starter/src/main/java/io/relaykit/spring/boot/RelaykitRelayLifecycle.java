package io.relaykit.spring.boot;

import io.relaykit.outbox.OutboxRelay;
import java.time.Duration;
import java.util.Objects;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the application's {@link OutboxRelay} with the Spring context: started when the context
 * starts, closed gracefully when it stops.
 *
 * <p>Phase {@link #PHASE}: before Spring Boot's web server starts and after it has finished its
 * in-flight requests on shutdown, so a message appended by a request still being served during a
 * graceful shutdown is relayed before the relay stops. (A relay only publishes, so running it
 * before the web server serves does no harm; the {@link RelaykitListener} consumers, which must
 * not run before the application can serve, start after it, in {@link
 * RelaykitListenerRegistry#PHASE}.)
 *
 * <p>Stop: one call, {@link OutboxRelay#close(Duration)} with nine tenths of {@code
 * spring.lifecycle.timeout-per-shutdown-phase} (the same stop deadline as {@link
 * RelaykitListenerRegistry}'s), on Spring's shutdown thread: no new claims, the batch in flight
 * waits for its confirms and is marked sent. The close waits for the relay's worker at most that
 * long and does not interrupt it (an interrupt inside a JDBC call can break the connection), so
 * the stop returns within the phase timeout whatever the broker does. A worker still running then
 * is logged at WARNING and left to finish its cycle on its daemon thread; rows not confirmed stay
 * in the outbox, unsent, and are published by the next relay once their lease runs out (on the
 * JDBC storage; the in-memory outbox dies with the process).
 *
 * <p>Single use: an {@link OutboxRelay} cannot be started again once closed, so neither can this
 * lifecycle. A {@code start()} after {@code stop()} (a context stopped and started again, rather
 * than closed and created anew) fails with an {@link IllegalStateException} saying so; the
 * unsent rows stay in the outbox for the next relay.
 */
public final class RelaykitRelayLifecycle implements SmartLifecycle {

  /** Before the web server starts ({@code DEFAULT_PHASE - 2048}), after it stops. */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

  private static final System.Logger LOG =
      System.getLogger(RelaykitRelayLifecycle.class.getName());

  private final OutboxRelay relay;
  private final Duration stopDeadline;
  private volatile boolean running;
  private boolean stopped;

  /**
   * Wraps {@code relay}, which must not be started yet.
   *
   * @param relay the relay
   * @param shutdownPhaseTimeout {@code spring.lifecycle.timeout-per-shutdown-phase}
   */
  public RelaykitRelayLifecycle(OutboxRelay relay, Duration shutdownPhaseTimeout) {
    this.relay = Objects.requireNonNull(relay, "relay");
    Objects.requireNonNull(shutdownPhaseTimeout, "shutdownPhaseTimeout");
    if (shutdownPhaseTimeout.isNegative() || shutdownPhaseTimeout.isZero()) {
      throw new IllegalArgumentException("spring.lifecycle.timeout-per-shutdown-phase must be"
          + " positive, was " + shutdownPhaseTimeout);
    }
    this.stopDeadline = RelaykitListenerRegistry.stopDeadline(shutdownPhaseTimeout);
  }

  /**
   * The relay this lifecycle runs.
   *
   * @return the relay
   */
  public OutboxRelay relay() {
    return relay;
  }

  /**
   * Starts the relay; nothing when it runs already.
   *
   * @throws IllegalStateException if this lifecycle was stopped before: the relay is closed and
   *     cannot run again
   */
  @Override
  public synchronized void start() {
    if (stopped) {
      throw new IllegalStateException("relaykit's outbox relay was stopped and cannot be"
          + " restarted (an OutboxRelay runs once); close this application context and start a"
          + " new one; unsent rows stay in the outbox for the next relay");
    }
    if (!running) {
      relay.start();
      running = true;
    }
  }

  /** Closes the relay gracefully (see the class comment); nothing when it does not run. */
  @Override
  public synchronized void stop() {
    if (running) {
      running = false;
      stopped = true;
      if (!relay.close(stopDeadline)) {
        LOG.log(System.Logger.Level.WARNING, "relaykit: the outbox relay's worker was still"
            + " running after " + stopDeadline + " (the shutdown deadline); left to finish its"
            + " cycle. Rows it had not marked sent stay in the outbox and are published by the"
            + " next relay once their lease runs out");
      }
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }
}

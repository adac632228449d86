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
 * <p>Stop: {@link OutboxRelay#close(Duration)} with four fifths of {@code
 * spring.lifecycle.timeout-per-shutdown-phase}: no new claims, the batch in flight waits for its
 * confirms and is marked sent. Rows not confirmed by then stay in the outbox, unsent, and are
 * published by the next relay once their lease runs out (on the JDBC storage; the in-memory
 * outbox dies with the process).
 *
 * <p>Single use: an {@link OutboxRelay} cannot be started again once closed, so neither can this
 * lifecycle. A {@code start()} after {@code stop()} (a context stopped and started again, rather
 * than closed and created anew) fails with an {@link IllegalStateException} saying so; the
 * unsent rows stay in the outbox for the next relay.
 */
public final class RelaykitRelayLifecycle implements SmartLifecycle {

  /** Before the web server starts ({@code DEFAULT_PHASE - 2048}), after it stops. */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

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
    this.stopDeadline = RelaykitListenerRegistry.drainDeadline(shutdownPhaseTimeout);
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
      relay.close(stopDeadline);
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

package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayTarget;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.JdbcDeadLetterStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.util.ClassUtils;

/**
 * How the dead-letter endpoint replays, chosen from the application's beans, first match wins:
 * <ol>
 *   <li>the application's own {@link ReplayTarget} bean, through core's {@link
 *       DeadLetterReplayer}: on a store with replay marks (JDBC, Redis, in-memory) the dead letter
 *       stays until the resend is confirmed, so a lost reply or a crash loses nothing;
 *   <li>JDBC storage: {@link JdbcDeadLetterStore#replayToOutbox}, the delete and the outbox row in
 *       one transaction;
 *   <li>the in-memory outbox: {@link DeadLetterReplayer} appending to it;
 *   <li>otherwise (an outbox store of the application's): a confirmed publish to the dead letter's
 *       source through the {@link Publisher}, waiting at most the confirm timeout.
 * </ol>
 */
final class DeadLetterReplays {

  private static final boolean JDBC_PRESENT = ClassUtils.isPresent(
      "io.relaykit.storage.jdbc.JdbcDeadLetterStore", DeadLetterReplays.class.getClassLoader());

  private DeadLetterReplays() {}

  static RelaykitDeadLettersEndpoint.Replay choose(DeadLetterStore deadLetters, OutboxStore outbox,
      Publisher publisher, ReplayTarget target, Duration confirmTimeout,
      LifecycleListener listener) {
    if (target != null) {
      return replayer(deadLetters, target, listener);
    }
    if (JDBC_PRESENT) {
      RelaykitDeadLettersEndpoint.Replay jdbc = Jdbc.replay(deadLetters, outbox, listener);
      if (jdbc != null) {
        return jdbc;
      }
    }
    if (outbox instanceof InMemoryOutboxStore memory) {
      return replayer(deadLetters, d -> memory.append(d.source(), d.message()), listener);
    }
    return replayer(deadLetters, d -> publish(publisher, d, confirmTimeout), listener);
  }

  private static RelaykitDeadLettersEndpoint.Replay replayer(DeadLetterStore store,
      ReplayTarget target, LifecycleListener listener) {
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, target, listener,
        InstantSource.system());
    return replayer::replay;
  }

  private static void publish(Publisher publisher, DeadLetter d, Duration timeout)
      throws InterruptedException, ExecutionException, TimeoutException {
    publisher.publish(d.source(), d.message()).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Loaded only when relaykit-jdbc is on the class path. */
  private static final class Jdbc {
    static RelaykitDeadLettersEndpoint.Replay replay(DeadLetterStore deadLetters,
        OutboxStore outbox, LifecycleListener listener) {
      if (deadLetters instanceof JdbcDeadLetterStore jdbc && outbox instanceof JdbcOutboxStore o) {
        return id -> {
          java.util.Optional<io.relaykit.deadletter.DeadLetter> taken = jdbc.replayToOutbox(id, o);
          taken.ifPresent(d -> LifecycleListener.safely(listener,
              new io.relaykit.monitor.LifecycleEvent(io.relaykit.monitor.LifecycleEvent.Stage
                  .REPLAYED, d.messageId(), d.message().traceId(), d.source(),
                  InstantSource.system().instant(), "replayed")));
          return taken;
        };
      }
      return null;
    }
  }
}

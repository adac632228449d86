package io.relaykit.spring.boot;

import io.relaykit.message.Message;
import io.relaykit.retry.PermanentFailureException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/**
 * An application with Actuator and one @RelaykitListener on {@code test.destination} (group
 * {@code test.group}) that refuses every message as a permanent failure until it is healed.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(DeadLetterEndpointApp.Poisoned.class)
public class DeadLetterEndpointApp {

  /** The listener. */
  public static class Poisoned {
    final AtomicBoolean healed = new AtomicBoolean();
    final List<String> refused = new CopyOnWriteArrayList<>();
    final List<String> handled = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "${test.destination}", group = "${test.group}")
    void on(Message m) {
      if (!healed.get()) {
        refused.add(m.id());
        throw new PermanentFailureException("poison: " + m.id());
      }
      handled.add(m.id());
    }
  }
}

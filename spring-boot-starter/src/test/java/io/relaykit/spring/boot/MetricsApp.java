package io.relaykit.spring.boot;

import io.relaykit.message.Message;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/**
 * An application with Actuator's registry, the starter's binder and two @RelaykitListener methods:
 * one that succeeds on {@code test.destination}, one that always fails on {@code
 * test.fail-destination}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(MetricsApp.Handlers.class)
public class MetricsApp {

  /** The two listeners. */
  public static class Handlers {
    final List<String> handled = new CopyOnWriteArrayList<>();
    final List<String> failed = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "${test.destination}", group = "${test.group}")
    void onOrder(Message m) {
      handled.add(m.id());
    }

    @RelaykitListener(destination = "${test.fail-destination}", group = "${test.group}-fail")
    void onOrderFailing(Message m) {
      failed.add(m.id());
      throw new IllegalStateException("always fails: " + m.id());
    }
  }
}

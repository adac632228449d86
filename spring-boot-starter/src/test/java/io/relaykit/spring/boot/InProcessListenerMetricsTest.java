package io.relaykit.spring.boot;

import java.util.List;

/** The binder's numbers on the in-process transport and in-memory storage. */
class InProcessListenerMetricsTest extends AbstractListenerMetricsTest {

  @Override
  List<String> transportProperties(String... destinations) {
    return List.of();
  }
}

package io.relaykit.spring.boot;

import java.util.List;

/** The listener lifecycle on the default transport (in-process) and H2. */
class InProcessListenerLifecycleTest extends AbstractListenerLifecycleTest {
  @Override
  List<String> transportProperties() {
    return List.of();
  }
}

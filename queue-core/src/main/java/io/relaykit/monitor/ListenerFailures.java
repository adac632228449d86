package io.relaykit.monitor;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/** Reports a failing listener once per listener instance, not once per event. */
final class ListenerFailures {
  private static final System.Logger LOG = System.getLogger(LifecycleListener.class.getName());
  private static final Set<Object> REPORTED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private ListenerFailures() {}

  static void report(Object listener, Throwable e) {
    if (REPORTED.add(listener)) {
      LOG.log(System.Logger.Level.WARNING,
          "listener " + listener.getClass().getName()
              + " threw; its failures are contained and not logged again", e);
    }
  }
}

package io.relaykit.spring.boot;

import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The application's {@link MetricsListener} and {@link LifecycleListener} beans (the Micrometer
 * binder of {@link RelaykitMicrometerAutoConfiguration} among them), composed once with core's
 * {@link MetricsListener#composite} and {@link LifecycleListener#composite} in {@link
 * org.springframework.core.annotation.Order} order, for the starter's beans: the transports'
 * publishers and subscribers (whose metrics listener is the default of every subscription on
 * them, {@link RelaykitListener} methods included, unless a spec names its own) and the relay.
 *
 * <p>The relay and the starter's publishers both report PUBLISHED and CONFIRMED for each relayed
 * message. {@link #relayLifecycle} therefore hands the relay every step but those two when its
 * publisher is one the starter wired to these listeners ({@link #reportsTo}), and every step when
 * it is the application's own {@link Publisher} bean, so each listener sees each step once (for
 * the binder this is {@code RelayKitMeterBinder.relayListener()}).
 *
 * <p>The beans are looked up at the first call, when the first starter bean that reports is
 * created; a listener bean that itself needs a relaykit bean reporting to it is a dependency cycle
 * and fails the context's start. A listener that throws is contained by the composites: delivery
 * goes on. Cost per event: one call per listener. Thread-safe.
 */
public final class RelaykitMonitoring {

  private final ObjectProvider<MetricsListener> metricsBeans;
  private final ObjectProvider<LifecycleListener> lifecycleBeans;
  private final Set<Publisher> reporting = Collections.synchronizedSet(
      Collections.newSetFromMap(new IdentityHashMap<>()));
  private volatile Composed composed;

  /**
   * Creates the holder; the beans are resolved at the first call.
   *
   * @param metrics the application's metrics listeners
   * @param lifecycle the application's lifecycle listeners
   * @throws NullPointerException if an argument is null
   */
  RelaykitMonitoring(ObjectProvider<MetricsListener> metrics,
      ObjectProvider<LifecycleListener> lifecycle) {
    this.metricsBeans = Objects.requireNonNull(metrics, "metrics");
    this.lifecycleBeans = Objects.requireNonNull(lifecycle, "lifecycle");
  }

  private Composed composed() {
    Composed c = composed;
    if (c == null) {
      synchronized (this) {
        c = composed;
        if (c == null) {
          List<MetricsListener> m = metricsBeans.orderedStream().toList();
          List<LifecycleListener> l = lifecycleBeans.orderedStream().toList();
          c = new Composed(m.isEmpty() ? null : MetricsListener.composite(m),
              l.isEmpty() ? null : LifecycleListener.composite(l));
          composed = c;
        }
      }
    }
    return c;
  }

  /**
   * Whether the application defines at least one metrics listener bean.
   *
   * @return true if {@link #metrics()} reports somewhere
   */
  public boolean hasMetrics() {
    return composed().metrics != null;
  }

  /**
   * Whether the application defines at least one lifecycle listener bean.
   *
   * @return true if {@link #lifecycle()} reports somewhere
   */
  public boolean hasLifecycle() {
    return composed().lifecycle != null;
  }

  /**
   * Every metrics listener bean, composed; {@link MetricsListener#noop()} when there is none.
   *
   * @return the same listener on every call
   */
  public MetricsListener metrics() {
    MetricsListener m = composed().metrics;
    return m != null ? m : NOOP_METRICS;
  }

  /**
   * Every lifecycle listener bean, composed; {@link LifecycleListener#noop()} when there is none.
   *
   * @return the same listener on every call
   */
  public LifecycleListener lifecycle() {
    LifecycleListener l = composed().lifecycle;
    return l != null ? l : NOOP_LIFECYCLE;
  }

  /**
   * Records that {@code publisher} reports PUBLISHED and CONFIRMED to {@link #lifecycle()}; the
   * starter calls it for each publisher it builds with these listeners.
   *
   * @param publisher the publisher
   * @param <P> its type
   * @return {@code publisher}
   */
  <P extends Publisher> P reportsTo(P publisher) {
    reporting.add(Objects.requireNonNull(publisher, "publisher"));
    return publisher;
  }

  /**
   * Whether {@code publisher} was built by the starter to report to {@link #lifecycle()}.
   *
   * @param publisher the relay's publisher
   * @return true if it reports PUBLISHED and CONFIRMED itself
   */
  public boolean reports(Publisher publisher) {
    return reporting.contains(publisher);
  }

  /**
   * The lifecycle listener for a relay over {@code publisher}: {@link #lifecycle()} without
   * PUBLISHED and CONFIRMED when {@link #reports} the publisher, else {@link #lifecycle()}.
   *
   * @param publisher the relay's publisher
   * @return the relay's listener
   */
  public LifecycleListener relayLifecycle(Publisher publisher) {
    LifecycleListener all = lifecycle();
    if (!reports(publisher)) {
      return all;
    }
    return event -> {
      if (event.stage() != LifecycleEvent.Stage.PUBLISHED
          && event.stage() != LifecycleEvent.Stage.CONFIRMED) {
        all.on(event);
      }
    };
  }

  private static final MetricsListener NOOP_METRICS = MetricsListener.noop();
  private static final LifecycleListener NOOP_LIFECYCLE = LifecycleListener.noop();

  private record Composed(MetricsListener metrics, LifecycleListener lifecycle) {
  }
}

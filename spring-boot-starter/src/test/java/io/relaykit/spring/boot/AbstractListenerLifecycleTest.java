package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Subscription;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A real application context with @RelaykitListener methods: an append in a committed
 * @Transactional reaches the listener through the relay and the transport, a rolled-back one never
 * does, closing the context drains the handler in flight, a handler stuck past the shutdown phase
 * is not acknowledged and does not hold the close past the phase, and a lazy listener bean created
 * after the start is subscribed.
 */
abstract class AbstractListenerLifecycleTest {

  static final Duration WAIT = Duration.ofSeconds(30);

  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  /**
   * The properties of the transport under test, besides storage and names; called once per
   * context, so it may create a destination for it and name it in {@code test.destination}.
   */
  abstract List<String> transportProperties();

  ConfigurableApplicationContext start(String group, String... overrides) {
    List<String> props = new ArrayList<>(List.of(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.storage=h2",
        "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
        "relaykit.relay.poll-interval=50ms",
        "spring.lifecycle.timeout-per-shutdown-phase=20s",
        // The web server starts (listeners come after it), on a free loopback port.
        "server.port=0",
        "server.address=127.0.0.1",
        "test.orders-table=" + unique("orders"),
        "test.group=" + group));
    props.addAll(transportProperties());
    props.addAll(List.of(overrides));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ListenerApp.class)
        .properties(props.toArray(String[]::new)).run();
    contexts.add(ctx);
    JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
    jdbc.execute("CREATE TABLE " + ctx.getEnvironment().getProperty("test.orders-table")
        + " (id VARCHAR(64) PRIMARY KEY)");
    return ctx;
  }

  /** The name the registry gives (and logs for) the plain listener of {@code env}'s context. */
  static String plainListener(Environment env) {
    return env.getProperty("test.destination", "orders") + "/"
        + env.getRequiredProperty("test.group") + " (" + ListenerApp.Inbox.class.getName()
        + ".onOrder)";
  }

  @AfterEach
  void closeContexts() throws Exception {
    for (ConfigurableApplicationContext ctx : contexts) {
      ctx.close();
      cleanUp(ctx.getEnvironment());
    }
  }

  /**
   * Removes what the closed context {@code env} left on a shared broker; by default nothing.
   *
   * @param env the closed context's environment ({@code test.destination}, {@code test.group})
   */
  void cleanUp(Environment env) throws Exception {
  }

  @Test
  void aCommittedAppendReachesTheListenerAndARolledBackOneNever() {
    ConfigurableApplicationContext ctx = start(unique("g"));
    TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
    ListenerApp.Inbox inbox = ctx.getBean(ListenerApp.Inbox.class);
    String key = unique("k");
    String rolledBack = unique("rb");
    String committed = unique("ok");

    assertThatThrownBy(() -> service.place(rolledBack, key, true))
        .hasMessageContaining("business failure");
    service.place(committed, key, false);

    // Same key, so delivered in order: once the later one is in, the earlier had its turn.
    Await.until(WAIT, "the committed order reaches the listener",
        () -> inbox.received.contains(committed));
    assertThat(inbox.received).doesNotContain(rolledBack);
  }

  @Test
  void anIdempotentListenerRunsOncePerBusinessKey() {
    ConfigurableApplicationContext ctx = start(unique("g"));
    TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
    ListenerApp.Inbox inbox = ctx.getBean(ListenerApp.Inbox.class);
    String key = unique("k");
    String x = unique("x");
    String y = unique("y");

    service.place(x + ".1", key, false);
    service.place(x + ".2", key, false);
    service.place(y + ".1", key, false);

    // One key, so in order: when y.1 is handled, x.2 was seen and skipped as done.
    Await.until(WAIT, "y.1 reaches the idempotent listener", () -> inbox.once.contains(y + ".1"));
    assertThat(inbox.once).containsExactly(x + ".1", y + ".1");
    // The plain listener is another group: it runs at its own pace.
    Await.until(WAIT, "the plain listener received all three", () -> inbox.received.containsAll(
        java.util.List.of(x + ".1", x + ".2", y + ".1")));
  }

  @Test
  void closingTheContextDrainsTheHandlerInFlight() throws Exception {
    ConfigurableApplicationContext ctx = start(unique("g"));
    TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
    ListenerApp.Inbox inbox = ctx.getBean(ListenerApp.Inbox.class);
    RelaykitListenerRegistry registry = ctx.getBean(RelaykitListenerRegistry.class);
    assertThat(registry.isRunning()).isTrue();
    String slow = "slow-" + unique("o");
    service.place(slow, false);
    Await.until(WAIT, "the slow handler runs", () -> inbox.slowEntered.getCount() == 0);
    // The other group finished it: its completion must be committed (acked) by the close too.
    Await.until(WAIT, "the idempotent listener handles it", () -> inbox.once.contains(slow));

    AtomicReference<Throwable> closeFailure = new AtomicReference<>();
    Thread closer = new Thread(() -> {
      try {
        ctx.close();
        inbox.events.add("closed");
      } catch (Throwable t) {
        closeFailure.set(t);
      }
    }, "test-close");
    List<Subscription> subscriptions = registry.subscriptions();
    assertThat(subscriptions).hasSize(2).allMatch(Subscription::isRunning);
    closer.start();
    // The listener phase is stopping, this context's subscriptions closing (a subscription is not
    // running from the moment its close begins), while the handler is held.
    Await.until(WAIT, "this context's subscriptions are closing",
        () -> subscriptions.stream().noneMatch(Subscription::isRunning));
    assertThat(inbox.events).isEmpty();
    inbox.release.countDown();
    closer.join(WAIT.toMillis());

    assertThat(closeFailure.get()).isNull();
    assertThat(closer.isAlive()).isFalse();
    assertThat(inbox.events).containsExactly("handled " + slow, "closed");
    assertThat(inbox.received).contains(slow);
    assertThat(registry.isRunning()).isFalse();
    afterDrain(ctx.getEnvironment(), slow);
  }

  @Test
  void aHandlerStuckPastTheDeadlineIsNotAcknowledgedAndTheCloseKeepsToThePhaseTimeout()
      throws Exception {
    Duration phase = Duration.ofSeconds(2);
    ConfigurableApplicationContext ctx = start(unique("g"),
        "spring.lifecycle.timeout-per-shutdown-phase=" + phase.toSeconds() + "s");
    TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
    ListenerApp.Inbox inbox = ctx.getBean(ListenerApp.Inbox.class);
    ListenerApp.Events events = ctx.getBean(ListenerApp.Events.class);
    RelaykitListenerRegistry registry = ctx.getBean(RelaykitListenerRegistry.class);
    String stuck = "stuck-" + unique("o");
    try {
      service.place(stuck, false);
      Await.until(WAIT, "the stuck handler runs", () -> inbox.stuckEntered.getCount() == 0);
      Await.until(WAIT, "the idempotent listener handles it", () -> inbox.once.contains(stuck));

      long t0 = System.nanoTime();
      ctx.close();
      Duration took = Duration.ofNanos(System.nanoTime() - t0);

      // The registry gives up at nine tenths of the phase; the bound leaves room for the other
      // phases and bean destruction on a loaded machine, and a stop that ran past the phase per
      // stuck subscription would still exceed it.
      assertThat(took).as("closing the context with a stuck handler").isLessThan(
          phase.multipliedBy(2));
      assertThat(registry.isRunning()).isFalse();
      assertThat(registry.unfinishedAtLastStop()).as("subscriptions logged as unfinished")
          .containsExactly(plainListener(ctx.getEnvironment()));
      assertThat(inbox.events).doesNotContain("handled " + stuck);
      assertThat(inbox.received).doesNotContain(stuck);
      afterStuckClose(ctx.getEnvironment(), stuck, events);
    } finally {
      inbox.stuckRelease.countDown();
    }
  }

  /**
   * Checks what the backend holds after a context closed while the plain listener's handler of
   * {@code id} was stuck: the plain group did not acknowledge or commit it (the idempotent group
   * did).
   *
   * @param env the closed context's environment ({@code test.destination}, {@code test.group})
   * @param id the message whose handler was stuck
   * @param events what the context's lifecycle listener received
   */
  abstract void afterStuckClose(Environment env, String id, ListenerApp.Events events)
      throws Exception;

  @Test
  void aLazyListenerBeanCreatedAfterTheStartIsSubscribedAndStopsWithTheRegistry() {
    ConfigurableApplicationContext ctx = start(unique("g"));
    TestApp.OrderService service = ctx.getBean(TestApp.OrderService.class);
    RelaykitListenerRegistry registry = ctx.getBean(RelaykitListenerRegistry.class);
    assertThat(registry.isRunning()).isTrue();
    assertThat(registry.subscriptions()).hasSize(2);

    ListenerApp.LateInbox late = ctx.getBean(ListenerApp.LateInbox.class);
    List<Subscription> subscriptions = registry.subscriptions();
    assertThat(subscriptions).hasSize(3).allMatch(Subscription::isRunning);
    String id = unique("late");
    service.place(id, false);
    Await.until(WAIT, "the lazy listener receives " + id, () -> late.received.contains(id));

    ctx.close();
    assertThat(subscriptions).noneMatch(Subscription::isRunning);
    assertThat(registry.subscriptions()).isEmpty();
  }

  /**
   * Checks what the transport holds after the drain of {@code id} (acknowledged, committed); by
   * default nothing.
   *
   * @param env the closed context's environment ({@code test.destination}, {@code test.group})
   * @param id the message that was in flight when the context closed
   */
  void afterDrain(Environment env, String id) throws Exception {
  }
}

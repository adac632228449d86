package io.relaykit.test.spring;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.spring.boot.RelaykitMonitoring;
import io.relaykit.spring.boot.RelaykitRelayCustomizer;
import io.relaykit.spring.boot.TransactionalOutbox;
import io.relaykit.tck.FakeClock;
import io.relaykit.test.TestRelayKit;
import java.time.Duration;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * The beans of {@link RelaykitTest}: a {@link FakeClock}, the in-process transport on it, the
 * {@link TestRelayKit} watching it, and that harness's publisher and subscriber as the
 * application's {@link Publisher} and {@link Subscriber} (so the starter's relay and listeners use
 * them and its own transport beans back off). The relay runs on the fake clock and polls every 10
 * ms. Import it directly only if you cannot use the annotation.
 */
@Configuration(proxyBeanMethods = false)
public class RelaykitTestConfiguration {

  /** Imported by {@link RelaykitTest}. */
  public RelaykitTestConfiguration() {}

  /**
   * The clock of the transport and the relay; starts at {@link FakeClock#EPOCH}.
   *
   * @return the clock
   */
  @Bean
  public FakeClock relaykitTestClock() {
    return new FakeClock();
  }

  /**
   * The in-process transport, reporting to the application's listeners, dead-lettering into its
   * store.
   *
   * @param deadLetters the application's dead-letter store
   * @param monitoring the application's listeners
   * @param clock the test clock
   * @return the transport (closed with the context)
   */
  @Bean(destroyMethod = "close")
  public InProcessTransport relaykitTestTransport(DeadLetterStore deadLetters,
      RelaykitMonitoring monitoring, FakeClock clock) {
    return InProcessTransport.builder().clock(clock).deadLetters(deadLetters)
        .listener(monitoring.lifecycle()).metrics(monitoring.metrics()).build();
  }

  /**
   * The harness the test autowires.
   *
   * @param transport the transport
   * @param outbox the application's outbox
   * @param deadLetters the application's dead-letter store
   * @param clock the test clock
   * @return the harness
   */
  @Bean
  public TestRelayKit relaykitTestKit(InProcessTransport transport, TransactionalOutbox outbox,
      DeadLetterStore deadLetters, FakeClock clock) {
    return TestRelayKit.of(transport, outbox.store(), deadLetters, clock);
  }

  /**
   * The recording publisher, which the relay uses.
   *
   * @param kit the harness
   * @return its publisher
   */
  @Bean(destroyMethod = "")
  @Primary
  public Publisher relaykitTestPublisher(TestRelayKit kit) {
    return kit.publisher();
  }

  /**
   * The recording subscriber, which the {@code @RelaykitListener} methods subscribe through.
   *
   * @param kit the harness
   * @return its subscriber
   */
  @Bean(destroyMethod = "")
  @Primary
  public Subscriber relaykitTestSubscriber(TestRelayKit kit) {
    return kit.subscriber();
  }

  /**
   * Puts the relay on the test clock and a 10 ms poll. The transport already reports PUBLISHED and
   * CONFIRMED to the application's listeners, so the relay reports the other stages only.
   *
   * @param clock the test clock
   * @param monitoring the application's listeners
   * @return the customizer
   */
  @Bean
  public RelaykitRelayCustomizer relaykitTestRelay(FakeClock clock,
      RelaykitMonitoring monitoring) {
    return b -> {
      b.clock(clock).pollInterval(Duration.ofMillis(10));
      if (monitoring.hasLifecycle()) {
        LifecycleListener all = monitoring.lifecycle();
        b.listener(event -> {
          if (event.stage() != LifecycleEvent.Stage.PUBLISHED
              && event.stage() != LifecycleEvent.Stage.CONFIRMED) {
            all.on(event);
          }
        });
      }
    };
  }
}

package io.relaykit.spring.boot;

import io.relaykit.outbox.OutboxRelay;

/**
 * Adjusts the {@link OutboxRelay.Builder} of the starter's relay bean before it is built, after
 * the starter has applied {@code relaykit.relay.*} and {@code relaykit.retry.*}: a bean of this
 * type (several run in {@link org.springframework.core.annotation.Order} order) can set a metrics
 * listener, a lifecycle listener, a trace propagation or a clock. The application's {@code
 * MetricsListener} and {@code LifecycleListener} beans (the Micrometer binder among them) are set
 * before the customizers run ({@link RelaykitMonitoring}); to add a listener, define it as a bean
 * rather than setting it here.
 *
 * <p>A customizer that throws fails the context's start with its exception. A customizer that
 * sets {@link OutboxRelay.Builder#listener} or {@link OutboxRelay.Builder#metrics} replaces what
 * an earlier one set: compose with {@code LifecycleListener.composite} or {@code
 * MetricsListener.composite}.
 */
@FunctionalInterface
public interface RelaykitRelayCustomizer {

  /**
   * Adjusts the builder.
   *
   * @param builder the relay's builder, with the starter's settings applied
   */
  void customize(OutboxRelay.Builder builder);
}

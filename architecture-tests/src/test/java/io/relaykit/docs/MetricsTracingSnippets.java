package io.relaykit.docs;

// tag::meter-binder[]
import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Publisher;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
// end::meter-binder[]
// tag::guice-listeners[]
import com.google.inject.Binder;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
// end::guice-listeners[]
// tag::opentelemetry[]
import io.opentelemetry.api.OpenTelemetry;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Tracing;
import io.relaykit.opentelemetry.OpenTelemetryPropagation;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
// end::opentelemetry[]

/** docs/metrics-and-tracing.md. */
final class MetricsTracingSnippets {
  private MetricsTracingSnippets() {}

  static OutboxRelay meterBinder(Publisher publisher, MeterRegistry registry, OutboxStore outbox,
      DeadLetterStore deadLetters) {
    // tag::meter-binder[]
    RelayKitMeterBinder meters = RelayKitMeterBinder.builder()
        .messagingSystem(publisher.messagingSystem())  // kafka, rabbitmq, relaykit-inprocess
        .build();
    meters.bindTo(registry);  // a PrometheusMeterRegistry, OTLP, a CompositeMeterRegistry, ...
    OutboxRelay relay = OutboxRelay.builder(outbox, publisher, deadLetters)
        .metrics(meters)
        .listener(meters.relayListener())
        .build();
    // end::meter-binder[]
    return relay;
  }

  static void guiceListeners(Binder binder, RelayKitMeterBinder meters) {
    // tag::guice-listeners[]
    RelayKitModule.override(binder, LifecycleListener.class).toInstance(meters);
    RelayKitModule.override(binder, MetricsListener.class).toInstance(meters);
    // end::guice-listeners[]
  }

  static Subscriber openTelemetry(OpenTelemetry openTelemetry, JdbcStorage storage,
      Publisher publisher, DeadLetterStore deadLetters, Subscriber subscriber) {
    // tag::opentelemetry[]
    OpenTelemetryPropagation tracing = OpenTelemetryPropagation.create(openTelemetry); // your SDK
    JdbcOutboxStore outbox = storage.outboxStore().withTracePropagation(tracing);      // append: capture
    OutboxRelay relay = OutboxRelay.builder(outbox, publisher, deadLetters)
        .tracePropagation(tracing).build();                                            // PRODUCER spans
    Subscriber traced = Tracing.subscriber(subscriber, tracing);                       // CONSUMER spans
    // end::opentelemetry[]
    relay.close();
    return traced;
  }
}

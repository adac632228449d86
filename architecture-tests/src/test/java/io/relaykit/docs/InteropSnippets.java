package io.relaykit.docs;

// tag::foreign[]
import io.relaykit.message.InboundMapping;
import io.relaykit.message.SubscriptionSpec;
// end::foreign[]
// tag::trace-propagation[]
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Publisher;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Tracing;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.trace.TracePropagation;
// end::trace-propagation[]

/** docs/interop.md. */
final class InteropSnippets {
  private InteropSnippets() {}

  static SubscriptionSpec foreign() {
    // tag::foreign[]
    SubscriptionSpec spec = SubscriptionSpec.builder("orders", "billing")
        .inbound(InboundMapping.foreign()
            .idHeader("event-id")      // else the transport position
            .typeHeader("event-type")  // else the destination
            .keyHeader("order-id")     // else the transport key
            .cloudEvents(true)         // read ce_* / cloudEvents_* attributes too
            .build())
        .build();
    // end::foreign[]
    return spec;
  }

  static OutboxRelay tracePropagation(OutboxStore store, Publisher publisher,
      DeadLetterStore deadLetters, TracePropagation propagation, Subscriber subscriber,
      SubscriptionSpec spec, MessageHandler handler) {
    // tag::trace-propagation[]
    OutboxRelay relay = OutboxRelay.builder(store, publisher, deadLetters)
        .tracePropagation(propagation)   // PRODUCER span around each publish; default: discovered()
        .build();
    subscriber.subscribe(spec, Tracing.handler(handler, propagation)); // CONSUMER span around it
    // end::trace-propagation[]
    return relay;
  }
}

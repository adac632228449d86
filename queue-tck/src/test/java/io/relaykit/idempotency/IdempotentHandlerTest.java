package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.retry.FailureClassifier;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class IdempotentHandlerTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryIdempotencyStore store =
      new InMemoryIdempotencyStore(clock, Duration.ofHours(1));
  private final AtomicInteger runs = new AtomicInteger();

  private static Message order(String orderId) {
    return Message.builder().type("order.paid").key(orderId).payload("{}").build();
  }

  private static String businessKey(Message m) {
    return m.key().orElse("") + ":sms";
  }

  private IdempotentHandler handler(io.relaykit.message.MessageHandler delegate) {
    return new IdempotentHandler(store, IdempotentHandlerTest::businessKey, Duration.ofMinutes(1),
        delegate);
  }

  @Nested
  @DisplayName("claim, run, complete")
  class Flow {

    @Test
    @DisplayName("the first delivery runs the handler and marks the business key DONE")
    void firstRuns() throws Exception {
      handler(d -> runs.incrementAndGet()).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(runs).hasValue(1);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("a redelivery, even as a new message with a new id, returns normally without"
        + " running the handler")
    void doneSkips() throws Exception {
      IdempotentHandler h = handler(d -> runs.incrementAndGet());
      h.handle(Delivery.first(order("o-1"), "orders"));

      h.handle(Delivery.first(order("o-1"), "orders"));
      h.handle(new Delivery(order("o-1"), "orders", 3, clock.instant()));

      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("a failing handler releases the key and rethrows, so the retry runs the work")
    void failureReleases() throws Exception {
      IOException boom = new IOException("smtp down");
      IdempotentHandler failing = handler(d -> {
        runs.incrementAndGet();
        throw boom;
      });

      assertThatThrownBy(() -> failing.handle(Delivery.first(order("o-1"), "orders")))
          .isSameAs(boom);
      assertThat(store.status("o-1:sms")).isEmpty();

      handler(d -> runs.incrementAndGet()).handle(Delivery.first(order("o-1"), "orders"));
      assertThat(runs).hasValue(2);
      assertThat(store.status("o-1:sms")).contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("an Error from the handler releases the key too")
    void errorReleases() {
      IdempotentHandler failing = handler(d -> {
        throw new AssertionError("bug");
      });

      assertThatThrownBy(() -> failing.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(AssertionError.class).hasMessage("bug");
      assertThat(store.status("o-1:sms")).isEmpty();
    }

    @Test
    @DisplayName("a key held by another delivery throws a retryable WorkInProgressException and"
        + " does not run the handler")
    void inProgressIsRetryable() {
      Claim other = store.claim("o-1:sms", Duration.ofMinutes(1));

      assertThatThrownBy(() -> handler(d -> runs.incrementAndGet())
          .handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(WorkInProgressException.class)
          .hasMessageContaining("o-1:sms");
      assertThat(runs).hasValue(0);
      assertThat(RetryPolicy.defaults().isPermanent(new WorkInProgressException("x"))).isFalse();
      assertThat(FailureClassifier.defaults().classify(new WorkInProgressException("x")))
          .isEqualTo(FailureClassifier.Kind.RETRYABLE);
      assertThat(store.complete(other)).isTrue();
    }

    @Test
    @DisplayName("if the lease lapsed and was taken over while the handler ran, the delivery is"
        + " still acknowledged and the new holder keeps the key")
    void takeoverDuringHandler() throws Exception {
      Claim[] taker = new Claim[1];
      handler(d -> {
        clock.advance(Duration.ofMinutes(2));
        taker[0] = store.claim("o-1:sms", Duration.ofMinutes(1));
      }).handle(Delivery.first(order("o-1"), "orders"));

      assertThat(taker[0].isClaimed()).isTrue();
      assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a message without a business key is a permanent MalformedMessageException")
    void noBusinessKey() {
      IdempotentHandler h = new IdempotentHandler(store, m -> m.key().orElse(null),
          Duration.ofMinutes(1), d -> runs.incrementAndGet());
      Message keyless = Message.builder().type("t").payload("{}").build();

      assertThatThrownBy(() -> h.handle(Delivery.first(keyless, "orders")))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining(keyless.id())
          .hasMessageContaining("business key");
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("an oversize business key is a permanent MalformedMessageException")
    void oversizeBusinessKey() {
      IdempotentHandler h = new IdempotentHandler(store, m -> "k".repeat(600),
          Duration.ofMinutes(1), d -> runs.incrementAndGet());

      assertThatThrownBy(() -> h.handle(Delivery.first(order("o-1"), "orders")))
          .isInstanceOf(MalformedMessageException.class).hasMessageContaining("600 characters");
      assertThat(runs).hasValue(0);
    }

    @Test
    @DisplayName("the constructor names a null argument and a non-positive lease")
    void constructorChecks() {
      assertThatThrownBy(() -> new IdempotentHandler(null, m -> "k", Duration.ofMinutes(1),
          d -> { })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("store");
      assertThatThrownBy(() -> new IdempotentHandler(store, null, Duration.ofMinutes(1),
          d -> { })).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("businessKey");
      assertThatThrownBy(() -> new IdempotentHandler(store, m -> "k", Duration.ZERO, d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      assertThatThrownBy(() -> new IdempotentHandler(store, m -> "k", Duration.ofMinutes(1),
          null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("delegate");
    }
  }
}

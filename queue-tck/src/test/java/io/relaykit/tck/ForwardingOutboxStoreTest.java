package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxFullException;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.outbox.OutboxWakeup;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ForwardingOutboxStoreTest {

  @Test
  @DisplayName("every method of OutboxStore, the default ones included, is forwarded: a default"
      + " added later and not forwarded would answer for the wrapper instead of the real store")
  void everyMethodIsForwarded() {
    List<String> missing = new ArrayList<>();
    for (Method m : OutboxStore.class.getMethods()) {
      if (Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      try {
        ForwardingOutboxStore.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
      } catch (NoSuchMethodException e) {
        missing.add(m.toString());
      }
    }
    assertThat(missing).as("OutboxStore methods ForwardingOutboxStore does not forward").isEmpty();
  }

  @Test
  @DisplayName("the wrapper's wakeup is the real store's, so committed() on the wrapper wakes the"
      + " real store's relays; its bound and append counters are the real store's")
  void wakeupBoundAndCountersAreTheRealStores() throws Exception {
    InMemoryOutboxStore real = new InMemoryOutboxStore(InstantSource.system(), OutboxBound.refuseAbove(1));
    OutboxStore wrapper = new ForwardingOutboxStore(real);
    OutboxWakeup wakeup = real.wakeup().orElseThrow();
    assertThat(wrapper.wakeup()).containsSame(wakeup);
    AtomicInteger woken = new AtomicInteger();
    try (OutboxWakeup.Subscription s = wakeup.subscribe(woken::incrementAndGet)) {
      wrapper.committed();
      assertThat(woken).hasValue(1);
    }
    assertThat(wrapper.bound()).isSameAs(real.bound());
    real.append("orders", Message.builder().type("t").payload("1").build());
    assertThatThrownBy(() -> real.append("orders", Message.builder().type("t").payload("2")
        .build())).isInstanceOf(OutboxFullException.class);
    assertThat(wrapper.refusedAppends()).isEqualTo(1);
    assertThat(wrapper.overBoundAppends()).isEqualTo(real.overBoundAppends());
  }
}

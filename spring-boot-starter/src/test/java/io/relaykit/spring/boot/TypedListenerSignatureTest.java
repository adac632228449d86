package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.codec.Payloads;
import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.jackson.JacksonJsonCodec;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.Subscriber;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

/** Which listener signatures take a typed payload, and how a bad one fails, naming the method. */
class TypedListenerSignatureTest {

  /** A payload. */
  public record Order(String id) {}

  static class Good {
    @RelaykitListener(destination = "a", group = "g")
    void alone(Order o) {
    }

    @RelaykitListener(destination = "a", group = "g2")
    void withMessage(Message m, Order o) {
    }

    @RelaykitListener(destination = "a", group = "g3", codec = "application/json")
    void withDelivery(Order o, Delivery d) {
    }
  }

  static class TwoPayloads {
    @RelaykitListener(destination = "a", group = "g")
    void two(Order a, String b) {
    }
  }

  static class Generic {
    @RelaykitListener(destination = "a", group = "g")
    void list(List<Order> orders) {
    }
  }

  static class UnknownCodec {
    @RelaykitListener(destination = "a", group = "g", codec = "application/avro")
    void avro(Order o) {
    }
  }

  static class CodecWithoutPayload {
    @RelaykitListener(destination = "a", group = "g", codec = "application/json")
    void plain(Message m) {
    }
  }

  private static RelaykitListenerRegistry registry(boolean withPayloads) {
    DefaultListableBeanFactory bf = new DefaultListableBeanFactory();
    bf.registerSingleton("settings", Settings.empty());
    if (withPayloads) {
      bf.registerSingleton("payloads", Payloads.of(new JacksonJsonCodec()));
    }
    return new RelaykitListenerRegistry(bf.getBeanProvider(Subscriber.class),
        bf.getBeanProvider(IdempotencyStore.class), bf.getBeanProvider(Settings.class),
        bf.getBeanProvider(Payloads.class), Duration.ofSeconds(2));
  }

  @Test
  @DisplayName("a payload type alone, or beside a Message or Delivery in either order, is accepted")
  void goodSignatures() {
    RelaykitListenerRegistry r = registry(true);
    r.postProcessAfterInitialization(new Good(), "good");
    assertThat(r.specs()).hasSize(3);
  }

  @Test
  @DisplayName("two payload types, a generic payload type, an unknown codec, a codec without a"
      + " payload and a payload without any codec fail, naming the method")
  void badSignatures() {
    assertThatThrownBy(() -> registry(true).postProcessAfterInitialization(new TwoPayloads(),
        "two")).isInstanceOf(IllegalStateException.class).hasMessageContaining("two.two")
        .hasMessageContaining("two payload types");
    assertThatThrownBy(() -> registry(true).postProcessAfterInitialization(new Generic(),
        "generic")).isInstanceOf(IllegalStateException.class).hasMessageContaining("generic.list")
        .hasMessageContaining("java.util.List<");
    assertThatThrownBy(() -> registry(true).postProcessAfterInitialization(new UnknownCodec(),
        "avro")).isInstanceOf(IllegalStateException.class).hasMessageContaining("avro.avro")
        .hasMessageContaining("no payload codec for content type 'application/avro'");
    assertThatThrownBy(() -> registry(true).postProcessAfterInitialization(
        new CodecWithoutPayload(), "plain")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("takes no payload type");
    assertThatThrownBy(() -> registry(false).postProcessAfterInitialization(new Good(), "good"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("@RelaykitListener method good.")
        .hasMessageContaining("no payload codec is configured");
  }
}

package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.codec.PayloadCodec;
import io.relaykit.codec.PayloadConversionException;
import io.relaykit.codec.Payloads;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Message;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TypedOutboxAppendTest {

  /** A JDK-only codec for text: a CharSequence as UTF-8. */
  private static final class TextCodec implements PayloadCodec {
    private final String contentType;

    TextCodec(String contentType) {
      this.contentType = contentType;
    }

    @Override
    public String contentType() {
      return contentType;
    }

    @Override
    public byte[] encode(Object value) {
      if (!(value instanceof CharSequence s)) {
        throw new IllegalArgumentException("not text: " + value.getClass());
      }
      return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public <T> T decode(byte[] bytes, Class<T> type) {
      return type.cast(new String(bytes, StandardCharsets.UTF_8));
    }
  }

  @Test
  @DisplayName("append(destination, key, object) stores a message with its type and content type,"
      + " encoded by the destination's codec")
  void appendsTypedObjects() {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    Payloads payloads = Payloads.builder().defaultCodec(new TextCodec("text/plain"))
        .destination("audit", new TextCodec("text/x-audit")).build();
    TypedOutbox outbox = TypedOutbox.of(store, payloads);

    Message order = outbox.append("orders", "o-1", "hello");
    Message audit = outbox.append("audit", null, new StringBuilder("seen"));

    List<OutboxRecord> claimed = store.claim("relay", 10, Duration.ofSeconds(30), Instant.now());
    assertThat(claimed).extracting(OutboxRecord::destination).containsExactly("orders", "audit");
    Message stored = claimed.get(0).message();
    assertThat(stored.id()).isEqualTo(order.id());
    assertThat(stored.type()).isEqualTo("java.lang.String");
    assertThat(stored.key()).contains("o-1");
    assertThat(stored.headers()).containsEntry(CloudEvents.CONTENT_TYPE, "text/plain");
    assertThat(payloads.decode(stored, "orders", String.class)).isEqualTo("hello");
    assertThat(claimed.get(1).message().type()).isEqualTo(StringBuilder.class.getName());
    assertThat(claimed.get(1).message().headers())
        .containsEntry(CloudEvents.CONTENT_TYPE, "text/x-audit");
    assertThat(audit.payloadUtf8()).isEqualTo("seen");

    // The audit destination's messages are not the orders codec's content type.
    assertThatThrownBy(() -> payloads.decode(claimed.get(1).message(), "orders",
        CharSequence.class)).isInstanceOf(PayloadConversionException.class)
        .hasMessageContaining("codec reads text/plain")
        .hasMessageNotContaining("seen");
  }

  @Test
  @DisplayName("an object the codec refuses appends nothing")
  void refusedAppendsNothing() {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    TypedOutbox outbox = TypedOutbox.of(store, Payloads.of(new TextCodec("text/plain")));

    assertThatThrownBy(() -> outbox.append("orders", "o-1", 42))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot encode a java.lang.Integer");
    assertThatThrownBy(() -> outbox.append(" ", "o-1", "x"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(store.claim("relay", 10, Duration.ofSeconds(30), Instant.now())).isEmpty();
  }
}

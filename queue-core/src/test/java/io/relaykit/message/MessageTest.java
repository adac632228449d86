package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.Priority;
import io.relaykit.trace.TraceContext;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class MessageTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private static Message.Builder valid() {
    return Message.builder().type("order.paid").payload("{\"order\":42}").createdAt(T0);
  }

  @Nested
  @DisplayName("building")
  class Building {

    @Test
    @DisplayName("every field set is kept")
    void allFields() {
      Message m = Message.builder()
          .id("m-1").type("order.paid").schemaVersion(3).key("order-42")
          .payload(new byte[] {1, 2, 3})
          .header("tenant", "acme").header("region", "eu")
          .createdAt(T0).expiresAt(T0.plusSeconds(300))
          .priority(Priority.CRITICAL).traceId("4bf92f3577b34da6a3ce929d0e0e4736")
          .build();
      assertThat(m.id()).isEqualTo("m-1");
      assertThat(m.type()).isEqualTo("order.paid");
      assertThat(m.schemaVersion()).isEqualTo(3);
      assertThat(m.key()).hasValue("order-42");
      assertThat(m.payload()).containsExactly(1, 2, 3);
      assertThat(m.payloadSize()).isEqualTo(3);
      assertThat(m.headers()).containsExactly(Map.entry("tenant", "acme"), Map.entry("region", "eu"));
      assertThat(m.createdAt()).isEqualTo(T0);
      assertThat(m.expiresAt()).hasValue(T0.plusSeconds(300));
      assertThat(m.priority()).isEqualTo(Priority.CRITICAL);
      assertThat(m.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    }

    @Test
    @DisplayName("defaults: random id, new 32-hex trace id, now, schema 1, NORMAL, no key, no expiry")
    void defaults() {
      Instant before = Instant.now();
      Message m = Message.builder().type("t").payload("p").build();
      assertThat(m.id()).matches("[0-9a-f-]{36}");
      assertThat(m.traceId()).matches("[0-9a-f]{32}");
      assertThat(m.createdAt()).isBetween(before, Instant.now());
      assertThat(m.schemaVersion()).isEqualTo(1);
      assertThat(m.priority()).isEqualTo(Priority.NORMAL);
      assertThat(m.key()).isEmpty();
      assertThat(m.expiresAt()).isEmpty();
      assertThat(m.headers()).isEmpty();
      assertThat(m.payloadUtf8()).isEqualTo("p");
    }

    @Test
    @DisplayName("reusing a builder gives each message a new id and trace id")
    void builderReuse() {
      Message.Builder b = valid();
      Message first = b.build();
      Message second = b.build();
      assertThat(first.id()).isNotEqualTo(second.id());
      assertThat(first.traceId()).isNotEqualTo(second.traceId());
      assertThat(first).isNotEqualTo(second);
    }

    @Test
    @DisplayName("changing the builder after build does not change the built message")
    void builderDetached() {
      Message.Builder b = valid().header("a", "1");
      Message m = b.build();
      b.header("b", "2").payload("other").type("other");
      assertThat(m.headers()).containsOnlyKeys("a");
      assertThat(m.payloadUtf8()).isEqualTo("{\"order\":42}");
      assertThat(m.type()).isEqualTo("order.paid");
    }

    @Test
    @DisplayName("toBuilder derives a copy that keeps id, trace id and every field")
    void toBuilder() {
      Message m = valid().key("k").header("h", "v").expiresAt(T0.plusSeconds(5)).build();
      assertThat(m.toBuilder().build()).isEqualTo(m);
      Message changed = m.toBuilder().priority(Priority.LOW).build();
      assertThat(changed.id()).isEqualTo(m.id());
      assertThat(changed.traceId()).isEqualTo(m.traceId());
      assertThat(changed.priority()).isEqualTo(Priority.LOW);
      assertThat(m.priority()).isEqualTo(Priority.NORMAL);
    }

    @Test
    @DisplayName("headers(map) replaces all headers; headers(null) clears them")
    void replaceHeaders() {
      Map<String, String> h = new HashMap<>();
      h.put("x", "1");
      assertThat(valid().header("a", "b").headers(h).build().headers()).containsOnlyKeys("x");
      assertThat(valid().header("a", "b").headers(null).build().headers()).isEmpty();
    }
  }

  @Nested
  @DisplayName("immutability")
  class Immutability {

    @Test
    @DisplayName("the payload is copied in and out")
    void payloadCopies() {
      byte[] in = "abc".getBytes(StandardCharsets.UTF_8);
      Message m = valid().payload(in).build();
      in[0] = 'X';
      assertThat(m.payloadUtf8()).isEqualTo("abc");
      byte[] out = m.payload();
      out[0] = 'Y';
      assertThat(m.payloadUtf8()).isEqualTo("abc");
    }

    @Test
    @DisplayName("headers cannot be modified, nor changed through the map given to the builder")
    void headersUnmodifiable() {
      Map<String, String> h = new HashMap<>();
      h.put("a", "1");
      Message m = valid().headers(h).build();
      h.put("b", "2");
      assertThat(m.headers()).containsOnlyKeys("a");
      assertThatThrownBy(() -> m.headers().put("c", "3"))
          .isInstanceOf(UnsupportedOperationException.class);
    }
  }

  @Nested
  @DisplayName("validation")
  class Validation {

    @Test
    @DisplayName("blank id, type or trace id is rejected naming the field")
    void blanks() {
      assertThatThrownBy(() -> valid().id(" ").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("id must not be blank");
      assertThatThrownBy(() -> valid().type(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("type must not be null");
      assertThatThrownBy(() -> valid().type("").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("type must not be blank");
      assertThatThrownBy(() -> valid().traceId("\t").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("traceId must not be blank");
    }

    @Test
    @DisplayName("schema version below 1 is rejected")
    void schemaVersion() {
      assertThatThrownBy(() -> valid().schemaVersion(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("schemaVersion must be >= 1, was 0");
    }

    @Test
    @DisplayName("a blank key is rejected, a null key means no key")
    void key() {
      assertThatThrownBy(() -> valid().key("  ").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("key must not be blank (use null for no key)");
      assertThat(valid().key(null).build().key()).isEmpty();
    }

    @Test
    @DisplayName("a missing or empty payload is rejected")
    void payload() {
      assertThatThrownBy(() -> Message.builder().type("t").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("payload must not be null");
      assertThatThrownBy(() -> valid().payload((byte[]) null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("payload must not be null");
      assertThatThrownBy(() -> valid().payload(new byte[0]).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("payload must not be empty");
      assertThatThrownBy(() -> valid().payload("").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("payload must not be empty");
    }

    @Test
    @DisplayName("blank or reserved header names and null header values are rejected")
    void headers() {
      assertThatThrownBy(() -> valid().header(" ", "v").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("header name must not be blank");
      assertThatThrownBy(() -> valid().header(null, "v").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("header name must not be null");
      assertThatThrownBy(() -> valid().header("relaykit-attempt", "1").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("header name relaykit-attempt is reserved");
      assertThatThrownBy(() -> valid().header("RelayKit-Id", "x").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("RelayKit-Id is reserved");
      assertThatThrownBy(() -> valid().header("h", null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("header h must not be null");
      assertThat(valid().header("relaykit", "not the prefix").build().headers())
          .containsKey("relaykit");
    }

    @Test
    @DisplayName("priority must be set; expiry must be after creation")
    void priorityAndExpiry() {
      assertThatThrownBy(() -> valid().priority(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessage("priority must not be null");
      assertThatThrownBy(() -> valid().expiresAt(T0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("expiresAt must be after createdAt (" + T0 + "), was " + T0);
      assertThatThrownBy(() -> valid().expiresAt(T0.minusSeconds(1)).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expiresAt");
    }
  }

  @Nested
  @DisplayName("behaviour")
  class Behaviour {

    @Test
    @DisplayName("a message is expired from its expiry instant on, never without one")
    void expiry() {
      Message m = valid().expiresAt(T0.plusSeconds(300)).build();
      assertThat(m.isExpiredAt(T0.plusSeconds(299))).isFalse();
      assertThat(m.isExpiredAt(T0.plusSeconds(300))).isTrue();
      assertThat(m.isExpiredAt(T0.plusSeconds(301))).isTrue();
      assertThat(valid().build().isExpiredAt(Instant.MAX)).isFalse();
    }

    @Test
    @DisplayName("equality covers every field, payload by content")
    void equality() {
      Message a = valid().id("same").traceId("t1").key("k").build();
      Message b = valid().id("same").traceId("t1").key("k").build();
      assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
      assertThat(a).isNotEqualTo(a.toBuilder().payload("other").build());
      assertThat(a).isNotEqualTo(a.toBuilder().key("k2").build());
      assertThat(a).isNotEqualTo(a.toBuilder().schemaVersion(2).build());
      assertThat(a).isNotEqualTo(a.toBuilder().header("h", "v").build());
      assertThat(a).isNotEqualTo(a.toBuilder().createdAt(T0.plusMillis(1)).build());
      assertThat(a).isNotEqualTo(a.toBuilder().expiresAt(T0.plusSeconds(9)).build());
      assertThat(a).isNotEqualTo(a.toBuilder().priority(Priority.LOW).build());
      assertThat(a).isNotEqualTo(a.toBuilder().traceId("t2").build());
      assertThat(a).isNotEqualTo(a.toBuilder().type("other").build());
      assertThat(a).isNotEqualTo(a.toBuilder().id("other").build());
      assertThat(a).isNotEqualTo("not a message");
    }

    @Test
    @DisplayName("toString shows the envelope and the payload size, never the payload")
    void toStringHidesPayload() {
      Message m = valid().id("m-9").payload("card=4111111111111111").header("tenant", "acme").build();
      assertThat(m.toString())
          .contains("id=m-9", "type=order.paid", "payloadBytes=21", "tenant")
          .doesNotContain("4111111111111111")
          .doesNotContain("acme");
    }

    @Test
    @DisplayName("new trace ids are 32 lowercase hex digits and differ")
    void traceIds() {
      String a = Message.newTraceId();
      assertThat(a).matches("[0-9a-f]{32}");
      assertThat(Message.newTraceId()).isNotEqualTo(a);
    }
  }

  @Nested
  @DisplayName("W3C trace context")
  class TraceContexts {
    private static final String PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    @Test
    @DisplayName("a valid traceparent header makes the trace id, even over an explicit one; it"
        + " survives the wire with its tracestate")
    void traceparentIsTheTraceId() {
      Message m = Message.builder().type("t").payload("x").traceId("0123456789abcdef0123456789abcdef")
          .header(TraceContext.TRACEPARENT, PARENT).header(TraceContext.TRACESTATE, "rojo=1").build();
      assertThat(m.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
      Message back = MessageHeaders.fromWire(MessageHeaders.toWire(m), null, m.payload());
      assertThat(back).isEqualTo(m);
      assertThat(Delivery.first(back, "orders").traceContext().map(TraceContext::traceState))
          .contains("rojo=1");
    }

    @Test
    @DisplayName("a malformed traceparent stays a plain header, is reported by traceContext(), and"
        + " never fails the build; the trace id is then the given or a new one")
    void malformedIsIgnored() {
      Message m = Message.builder().type("t").payload("x").traceId("0123456789abcdef0123456789abcdef")
          .header(TraceContext.TRACEPARENT, "00-zz-bad-01").build();
      assertThat(m.traceId()).isEqualTo("0123456789abcdef0123456789abcdef");
      assertThat(m.headers()).containsEntry(TraceContext.TRACEPARENT, "00-zz-bad-01");
      assertThat(m.traceContext().malformedTraceparent()).isTrue();
      assertThat(Delivery.first(m, "orders").traceContext()).isEmpty();
    }

    @Test
    @DisplayName("traceContext(...) on the builder sets both headers, and removes a stale"
        + " tracestate when the new state is empty")
    void builderSetsHeaders() {
      TraceContext c = TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true);
      Message m = Message.builder().type("t").payload("x").header(TraceContext.TRACESTATE, "old=1")
          .traceContext(c).build();
      assertThat(m.headers()).containsEntry(TraceContext.TRACEPARENT, PARENT)
          .doesNotContainKey(TraceContext.TRACESTATE);
      assertThat(m.traceContext().context()).contains(c);
    }
  }
}

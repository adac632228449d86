package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.MetricsListener;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class InboundMappingTest {

  private static final Instant RECEIVED = Instant.parse("2026-12-02T10:00:00Z");
  private static final Instant STAMP = Instant.parse("2026-12-01T09:00:00.123Z");
  private static final byte[] BODY = "{\"n\":1}".getBytes(StandardCharsets.UTF_8);

  private static InboundMapping.Inbound kafka(String key, Set<String> invalid) {
    return new InboundMapping.Inbound("orders", "orders-3@42", key, STAMP, RECEIVED, invalid,
        InboundMapping.KAFKA_CLOUDEVENTS_PREFIX);
  }

  private static Map<String, String> headers(String... pairs) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      m.put(pairs[i], pairs[i + 1]);
    }
    return m;
  }

  @Nested
  @DisplayName("default and strict")
  class DefaultAndStrict {
    @Test
    @DisplayName("the default accepts a record without relaykit-id as a foreign message, and each"
        + " spec gets its own mapping (its own counter)")
    void defaultAcceptsForeign() {
      InboundMapping first = SubscriptionSpec.builder("orders", "g").build().inbound();
      InboundMapping second = SubscriptionSpec.builder("orders", "g").build().inbound();
      assertThat(first.acceptsForeign()).isTrue();
      assertThat(first.readsCloudEvents()).isFalse();
      assertThat(first).isNotSameAs(second);
      InboundMapping.Decoded d = first.decode(headers("tenant", "acme"), BODY,
          kafka("k", Set.of()));
      assertThat(d.foreign()).isTrue();
      assertThat(d.message().id()).isEqualTo(InboundMapping.standard()
          .decode(headers("tenant", "acme"), BODY, kafka("k", Set.of())).message().id());
    }

    @Test
    @DisplayName("relaykitOnly rejects a record without relaykit-id as undecodable")
    void relaykitOnlyRejectsForeign() {
      assertThatThrownBy(() -> InboundMapping.relaykitOnly()
          .decode(headers("tenant", "acme"), BODY, kafka("k", Set.of())))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessage("missing header relaykit-id");
    }

    @Test
    @DisplayName("a foreign-accepting mapping still decodes relaykit's envelope unchanged")
    void relaykitEnvelopeWins() {
      Message m = Message.builder().id("m-1").type("order.paid").key("k").payload(BODY).build();
      Map<String, String> wire = MessageHeaders.toWire(m);
      InboundMapping.Decoded d = InboundMapping.foreign().idHeader("x-id").build()
          .decode(wire, BODY, kafka("k", Set.of()));
      assertThat(d.foreign()).isFalse();
      assertThat(d.message()).isEqualTo(m);
      assertThat(d.wire()).isSameAs(wire);
    }
  }

  @Nested
  @DisplayName("foreign mapping")
  class Foreign {
    @Test
    @DisplayName("keyOf gives the key decode gives: the key header's value for a foreign record,"
        + " the transport's key for a relaykit record, without a key header, or for a value"
        + " decode refuses")
    void keyOfMatchesDecode() {
      InboundMapping mapped = InboundMapping.foreign().keyHeader("order-id").build();
      Map<String, String> foreign = headers("order-id", "o-1");
      assertThat(mapped.keyOf(foreign::get, "raw")).isEqualTo("o-1")
          .isEqualTo(mapped.decode(foreign, BODY, kafka("raw", Set.of())).message().key()
              .orElseThrow());
      assertThat(mapped.keyOf(headers()::get, "raw")).isEqualTo("raw");
      assertThat(mapped.keyOf(headers()::get, " ")).isNull();
      Map<String, String> relaykit = MessageHeaders.toWire(Message.builder().type("t")
          .payload("p").build());
      relaykit.put("order-id", "o-1");
      assertThat(mapped.keyOf(relaykit::get, "raw")).isEqualTo("raw")
          .isEqualTo(mapped.decode(relaykit, BODY, kafka("raw", Set.of())).message().key()
              .orElseThrow());
      assertThat(InboundMapping.foreign().build().keyOf(foreign::get, "raw")).isEqualTo("raw");
      assertThat(InboundMapping.relaykitOnly().keyOf(foreign::get, "raw")).isEqualTo("raw");
      assertThat(mapped.keyOf(headers("order-id", " ")::get, "raw")).isEqualTo("raw");
      assertThat(mapped.keyOf(headers("order-id", "x".repeat(InboundMapping.MAX_MAPPED_CHARS
          + 1))::get, "raw")).isEqualTo("raw");
      assertThatThrownBy(() -> mapped.keyOf(null, "raw"))
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("no named headers: id is the position, type the destination, key and time the record's")
    void fallbacks() {
      InboundMapping.Decoded d = InboundMapping.foreign().build()
          .decode(headers("tenant", "acme"), BODY, kafka("order-7", Set.of()));
      Message m = d.message();
      assertThat(d.foreign()).isTrue();
      assertThat(m.id()).isEqualTo("orders-3@42");
      assertThat(m.type()).isEqualTo("orders");
      assertThat(m.key()).contains("order-7");
      assertThat(m.createdAt()).isEqualTo(STAMP);
      assertThat(m.headers()).containsExactly(Map.entry("tenant", "acme"));
      assertThat(m.traceId()).hasSize(32).isEqualTo(InboundMapping.traceIdOf("orders",
          "orders-3@42"));
      // pinned (printf 'orders\ne-1' | sha256sum): a derived trace id never changes across versions
      assertThat(InboundMapping.traceIdOf("orders", "e-1"))
          .isEqualTo("fd20b78dfcdf80194a4e10d7dcabc5d8");
      // the copies carry the full envelope, so retry and dead-letter copies decode as relaykit's
      assertThat(MessageHeaders.fromWire(d.wire(), "order-7", BODY)).isEqualTo(m);
    }

    @Test
    @DisplayName("named headers give id, type and key; no timestamp means the receive time")
    void namedHeaders() {
      InboundMapping mapping = InboundMapping.foreign().idHeader("event-id")
          .typeHeader("event-type").keyHeader("order").build();
      Message m = mapping.decode(headers("event-id", "e-9", "event-type", "order.paid",
          "order", "o-1"), BODY, new InboundMapping.Inbound("q", null, "rk", null, RECEIVED,
          Set.of(), null)).message();
      assertThat(m.id()).isEqualTo("e-9");
      assertThat(m.type()).isEqualTo("order.paid");
      assertThat(m.key()).contains("o-1");
      assertThat(m.createdAt()).isEqualTo(RECEIVED);
    }

    @Test
    @DisplayName("the same record decodes to the same id and trace id on every redelivery")
    void stable() {
      InboundMapping mapping = InboundMapping.foreign().build();
      Message a = mapping.decode(headers(), BODY, kafka(null, Set.of())).message();
      Message b = mapping.decode(headers(), BODY, new InboundMapping.Inbound("orders",
          "orders-3@42", null, STAMP, RECEIVED.plusSeconds(60), Set.of(), null)).message();
      assertThat(b.id()).isEqualTo(a.id());
      assertThat(b.traceId()).isEqualTo(a.traceId());
      assertThat(b.createdAt()).isEqualTo(a.createdAt());
    }
  }

  @Nested
  @DisplayName("bad input is undecodable, named")
  class BadInput {
    private final InboundMapping mapping = InboundMapping.foreign().idHeader("event-id").build();

    @Test
    @DisplayName("a blank id header")
    void blankId() {
      assertThatThrownBy(() -> mapping.decode(headers("event-id", "  "), BODY,
          kafka(null, Set.of()))).isInstanceOf(MalformedMessageException.class)
          .hasMessage("header event-id is blank: '  '");
    }

    @Test
    @DisplayName("an id header that is not UTF-8")
    void notUtf8() {
      assertThatThrownBy(() -> mapping.decode(headers(), BODY, kafka(null, Set.of("event-id"))))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessage("header event-id is not valid UTF-8");
    }

    @Test
    @DisplayName("an oversize id header")
    void oversize() {
      assertThatThrownBy(() -> mapping.decode(headers("event-id", "x".repeat(5000)), BODY,
          kafka(null, Set.of()))).isInstanceOf(MalformedMessageException.class)
          .hasMessageStartingWith("header event-id is 5000 characters, more than 1024");
    }

    @Test
    @DisplayName("no id and no position; an empty body")
    void noIdNoBody() {
      assertThatThrownBy(() -> mapping.decode(headers(), BODY, new InboundMapping.Inbound("q",
          null, null, null, RECEIVED, Set.of(), null)))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessage("no id: header event-id is absent and the transport gave no position");
      assertThatThrownBy(() -> mapping.decode(headers(), new byte[0], kafka(null, Set.of())))
          .isInstanceOf(MalformedMessageException.class).hasMessageStartingWith("empty body");
    }

    @Test
    @DisplayName("a reserved or blank header name is refused when building, naming the field")
    void builderChecks() {
      assertThatThrownBy(() -> InboundMapping.foreign().idHeader("relaykit-id"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("idHeader must not be a reserved relaykit header, was relaykit-id");
      assertThatThrownBy(() -> InboundMapping.foreign().typeHeader(" "))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("typeHeader must not be blank");
    }
  }

  @Nested
  @DisplayName("CloudEvents binary mode, the spec's examples")
  class CloudEvents {
    private final InboundMapping mapping = InboundMapping.foreign().cloudEvents(true).build();

    @Test
    @DisplayName("Kafka protocol binding example (ce_ headers, content-type)")
    void kafkaExample() {
      // https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/kafka-protocol-binding.md
      Map<String, String> wire = headers("ce_specversion", "1.0",
          "ce_type", "com.example.someevent", "ce_source", "/mycontext/subcontext",
          "ce_id", "1234-1234-1234", "ce_time", "2018-04-05T03:56:24Z",
          "content-type", "application/avro");
      Message m = mapping.decode(wire, BODY, kafka("mykey", Set.of())).message();
      assertThat(m.id()).isEqualTo(io.relaykit.message.CloudEvents.identity(
          "/mycontext/subcontext", "1234-1234-1234")).isEqualTo("ce:21:/mycontext/subcontext14:1234-1234-1234");
      assertThat(m.type()).isEqualTo("com.example.someevent");
      assertThat(m.createdAt()).isEqualTo(Instant.parse("2018-04-05T03:56:24Z"));
      assertThat(m.key()).contains("mykey");
      assertThat(m.headers()).containsEntry("ce_source", "/mycontext/subcontext")
          .containsEntry("content-type", "application/avro");
      assertThat(mapping.ignoredAttributes()).isZero();
    }

    @Test
    @DisplayName("AMQP example with the cloudEvents_ prefix (0-9-1 headers)")
    void amqpExample() {
      // https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/amqp-protocol-binding.md
      Map<String, String> wire = headers("cloudEvents_specversion", "1.0",
          "cloudEvents_type", "com.example.someevent", "cloudEvents_time", "2018-04-05T03:56:24Z",
          "cloudEvents_id", "1234-1234-1234", "cloudEvents_source", "/mycontext/subcontext",
          "cloudEvents_subject", "sub");
      Message m = mapping.decode(wire, BODY, new InboundMapping.Inbound("q", "q@sha256:ab", null,
          null, RECEIVED, Set.of(), InboundMapping.AMQP_CLOUDEVENTS_PREFIX)).message();
      assertThat(m.id()).isEqualTo(io.relaykit.message.CloudEvents.identity(
          "/mycontext/subcontext", "1234-1234-1234"));
      assertThat(m.type()).isEqualTo("com.example.someevent");
      assertThat(m.createdAt()).isEqualTo(Instant.parse("2018-04-05T03:56:24Z"));
      assertThat(m.headers()).containsEntry("cloudEvents_subject", "sub");
    }

    @Test
    @DisplayName("identity is (source, id): two sources with one id are two messages, and no"
        + " source can forge another's id (length-prefixed parts)")
    void identityIsSourceAndId() {
      Message a = mapping.decode(headers("ce_specversion", "1.0", "ce_source", "/a",
          "ce_id", "1"), BODY, kafka(null, Set.of())).message();
      Message b = mapping.decode(headers("ce_specversion", "1.0", "ce_source", "/b",
          "ce_id", "1"), BODY, kafka(null, Set.of())).message();
      assertThat(a.id()).isNotEqualTo(b.id()).isEqualTo("ce:2:/a1:1");
      assertThat(a.traceId()).isNotEqualTo(b.traceId());
      // A source that ends like another's source plus id: still another identity.
      assertThat(io.relaykit.message.CloudEvents.identity("/a1:1", "x"))
          .isNotEqualTo(io.relaykit.message.CloudEvents.identity("/a", "1:1x"))
          .isNotEqualTo(io.relaykit.message.CloudEvents.identity("/a1", ":1x"));
      assertThatThrownBy(() -> io.relaykit.message.CloudEvents.identity(" ", "1"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("source");
    }

    @Test
    @DisplayName("an id without its source (or the reverse, or either over-long) is no identity:"
        + " ignored and counted, the position decides")
    void idWithoutSourceIgnored() {
      Message m = mapping.decode(headers("ce_specversion", "1.0", "ce_id", "1"), BODY,
          kafka(null, Set.of())).message();
      assertThat(m.id()).isEqualTo("orders-3@42");
      assertThat(mapping.ignoredAttributes()).isEqualTo(1);
      Message n = mapping.decode(headers("ce_specversion", "1.0", "ce_id", "1",
          "ce_source", "s".repeat(InboundMapping.MAX_MAPPED_CHARS + 1)), BODY,
          kafka(null, Set.of())).message();
      assertThat(n.id()).isEqualTo("orders-3@42");
      assertThat(mapping.ignoredAttributes()).isEqualTo(3);
    }

    @Test
    @DisplayName("structured mode (application/cloudevents+json) reads the same identity, type,"
        + " time and attributes as binary mode; the payload is data")
    void structuredMode() {
      String json = "{\"specversion\":\"1.0\",\"type\":\"com.example.someevent\","
          + "\"source\":\"/mycontext/subcontext\",\"id\":\"1234-1234-1234\","
          + "\"time\":\"2018-04-05T03:56:24Z\",\"subject\":\"sub\","
          + "\"datacontenttype\":\"application/json\",\"n\":3,"
          + "\"data\":{\"a\":[1,\"}\",{\"b\":null}]}}";
      InboundMapping.Decoded d = mapping.decode(
          headers("content-type", "application/cloudevents+json; charset=UTF-8"),
          json.getBytes(java.nio.charset.StandardCharsets.UTF_8), kafka("k", Set.of()));
      Message m = d.message();
      Message binary = mapping.decode(headers("ce_specversion", "1.0",
          "ce_source", "/mycontext/subcontext", "ce_id", "1234-1234-1234"), BODY,
          kafka(null, Set.of())).message();
      assertThat(m.id()).isEqualTo(binary.id());
      assertThat(m.type()).isEqualTo("com.example.someevent");
      assertThat(m.createdAt()).isEqualTo(Instant.parse("2018-04-05T03:56:24Z"));
      assertThat(new String(m.payload(), java.nio.charset.StandardCharsets.UTF_8))
          .isEqualTo("{\"a\":[1,\"}\",{\"b\":null}]}");
      assertThat(m.headers()).containsEntry("ce_subject", "sub")
          .containsEntry("ce_source", "/mycontext/subcontext")
          .containsEntry("content-type", "application/json");
      assertThat(d.ignoredAttributes()).isZero();

      Message amqp = mapping.decode(headers("content-type", "application/cloudevents+json"),
          ("{\"specversion\":\"1.0\",\"type\":\"t\",\"source\":\"/b\",\"id\":\"1\","
              + "\"data_base64\":\"AAEC\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8),
          new InboundMapping.Inbound("q", "q@sha256:ab", null, null, RECEIVED, Set.of(),
              InboundMapping.AMQP_CLOUDEVENTS_PREFIX)).message();
      assertThat(amqp.id()).isEqualTo(io.relaykit.message.CloudEvents.identity("/b", "1"));
      assertThat(amqp.payload()).containsExactly(0, 1, 2);
      assertThat(amqp.headers()).containsEntry("cloudEvents_source", "/b");
    }

    @Test
    @DisplayName("a structured body that is not one CloudEvents JSON object is undecodable, with"
        + " where it went wrong; deep nesting is no stack overflow")
    void structuredModeBadInput() {
      Map<String, String> ct = headers("content-type", "application/cloudevents+json");
      for (String bad : List.of("", "[]", "{\"id\":\"1\"", "{\"id\":\"1\",\"id\":\"2\"}",
          "{\"data\":1,\"data_base64\":\"AA==\"}", "{\"data_base64\":\"%%\"}",
          "{\"source\":\"/a\",\"id\":\"1\"}", "{\"data\":tru}", "{\"data\":1} x",
          "{\"data\":" + "[".repeat(100_000) + "}")) {
        assertThatThrownBy(() -> mapping.decode(ct,
            bad.getBytes(java.nio.charset.StandardCharsets.UTF_8), kafka(null, Set.of())))
            .as(bad.length() > 40 ? bad.substring(0, 40) : bad)
            .isInstanceOf(MalformedMessageException.class);
      }
      assertThatThrownBy(() -> mapping.decode(ct, new byte[] {'{', (byte) 0xff, '}'},
          kafka(null, Set.of()))).isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining("UTF-8");
      // Without cloudEvents(true) the same body is an opaque foreign payload.
      Message plain = InboundMapping.standard().decode(ct, "[]".getBytes(
          java.nio.charset.StandardCharsets.UTF_8), kafka(null, Set.of())).message();
      assertThat(plain.id()).isEqualTo("orders-3@42");
    }

    @Test
    @DisplayName("adversarial structured JSON: an unpaired surrogate (it would turn into '?' on"
        + " the wire, so two events would share one id), a \\u escape that is not four hex"
        + " digits, brackets that do not match and values without commas are undecodable")
    void structuredModeAdversarial() {
      Map<String, String> ct = headers("content-type", "application/cloudevents+json");
      String head = "{\"specversion\":\"1.0\",\"source\":\"/a\",\"type\":\"t\",";
      for (String bad : List.of(
          head + "\"id\":\"\\ud800\",\"data\":\"x\"}",
          head + "\"id\":\"\\udc00x\",\"data\":\"x\"}",
          head + "\"id\":\"\\ud800\\u0041\",\"data\":\"x\"}",
          head + "\"id\":\"1\",\"data\":\"\\udfff\"}",
          head + "\"id\":\"\\u+041\",\"data\":\"x\"}",
          head + "\"id\":\"\\u-041\",\"data\":\"x\"}",
          head + "\"id\":\"1\",\"x\":[},\"data\":\"x\"}",
          head + "\"id\":\"1\",\"x\":{],\"data\":\"x\"}",
          head + "\"id\":\"1\",\"data\":[1 2]}",
          head + "\"id\":\"1\",\"data\":{\"a\" 1}}",
          head + "\"id\":\"1\",\"data\":{1:2}}",
          head + "\"id\":\"1\",\"data\":[1,,2]}",
          head + "\"id\":\"1\",\"data\":[1,]}",
          head + "\"id\":\"1\",\"data\":{\"a\":}}")) {
        assertThatThrownBy(() -> mapping.decode(ct, bad.getBytes(StandardCharsets.UTF_8),
            kafka(null, Set.of()))).as(bad).isInstanceOf(MalformedMessageException.class);
      }
      // A surrogate pair is one character: fine, and the same id as the raw character.
      Message pair = mapping.decode(ct, (head + "\"id\":\"\\ud83d\\ude00\",\"data\":"
          + "{\"a\":[1,{\"b\":[]},\"]\"]}}").getBytes(StandardCharsets.UTF_8),
          kafka(null, Set.of())).message();
      assertThat(pair.id()).isEqualTo(io.relaykit.message.CloudEvents.identity("/a",
          "\ud83d\ude00"));
      assertThat(pair.payloadUtf8()).isEqualTo("{\"a\":[1,{\"b\":[]},\"]\"]}");
    }

    @Test
    @DisplayName("malformed attributes are ignored and counted, never failing the message")
    void malformedIgnored() {
      Message m = mapping.decode(headers("ce_specversion", "1.0", "ce_id", " ",
          "ce_time", "yesterday"), BODY, kafka(null, Set.of())).message();
      assertThat(m.id()).isEqualTo("orders-3@42");
      assertThat(m.createdAt()).isEqualTo(STAMP);
      assertThat(mapping.ignoredAttributes()).isEqualTo(2);
      Message other = mapping.decode(headers("ce_specversion", "0.3", "ce_id", "x"), BODY,
          kafka(null, Set.of())).message();
      assertThat(other.id()).isEqualTo("orders-3@42");
      assertThat(mapping.ignoredAttributes()).isEqualTo(3);
    }

    @Test
    @DisplayName("each record says what it ignored, and reportIgnored reports it with malformed"
        + " trace headers as bounded reasons")
    void perRecordReport() {
      Map<String, Long> ignored = new LinkedHashMap<>();
      MetricsListener metrics = new MetricsListener() {
        @Override
        public void ignored(String destination, String reason, long count) {
          ignored.merge(destination + " " + reason, count, Long::sum);
        }
      };
      InboundMapping.Decoded bad = mapping.decode(headers("ce_specversion", "1.0", "ce_id", " ",
          "ce_type", "", "ce_time", "yesterday", "traceparent", "01-zz", "tracestate", "a=1"),
          BODY, kafka(null, Set.of()));
      InboundMapping.Decoded good = mapping.decode(headers("ce_specversion", "1.0", "ce_id", "x",
          "ce_source", "/s",
          "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          "tracestate", "k=v,k=w"), BODY, kafka(null, Set.of()));

      bad.reportIgnored(metrics, "orders");
      good.reportIgnored(metrics, "orders");

      assertThat(bad.ignoredAttributes()).isEqualTo(3);
      assertThat(good.ignoredAttributes()).isZero();
      assertThat(ignored).containsExactly(
          Map.entry("orders " + MetricsListener.IGNORED_CLOUDEVENTS_ATTRIBUTE, 3L),
          Map.entry("orders " + MetricsListener.IGNORED_TRACEPARENT, 1L),
          Map.entry("orders " + MetricsListener.IGNORED_TRACESTATE, 1L));
      assertThat(good.message().traceContext().context()).isPresent();
    }

    @Test
    @DisplayName("nothing ignored reports nothing, and a throwing listener is contained")
    void nothingIgnored() {
      MetricsListener throwing = new MetricsListener() {
        @Override
        public void ignored(String destination, String reason, long count) {
          throw new IllegalStateException("exporter down");
        }
      };
      Message plain = Message.builder().type("t").payload("x").build();
      Message bad = plain.toBuilder().header("traceparent", "nope").build();

      InboundMapping.reportIgnored(throwing, "orders", plain, 0);
      InboundMapping.reportIgnored(throwing, "orders", bad, 2);
      assertThatThrownBy(() -> InboundMapping.reportIgnored(throwing, "orders", plain, -1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("ignoredAttributes must be >= 0, was -1");
    }

    @Test
    @DisplayName("with CloudEvents off, ce_ headers are ordinary headers")
    void off() {
      Message m = InboundMapping.foreign().build().decode(headers("ce_specversion", "1.0",
          "ce_id", "1234"), BODY, kafka(null, Set.of())).message();
      assertThat(m.id()).isEqualTo("orders-3@42");
      assertThat(m.headers()).containsEntry("ce_id", "1234");
    }
  }
}

package io.relaykit.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.codec.PayloadConversionException;
import io.relaykit.codec.PayloadTypes;
import io.relaykit.codec.Payloads;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.retry.PermanentFailureException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TypedJacksonCodecTest {

  /** A common supertype a handler may take. */
  public interface OrderEvent {}

  /** An order was created. */
  public record OrderCreated(String orderId, long cents) implements OrderEvent {}

  /** An order was cancelled. */
  public record OrderCancelled(String orderId, String why) implements OrderEvent {}

  /** A bean whose getter throws: Jackson cannot write it. */
  public static final class Unwritable {
    /**
     * Throws.
     *
     * @return never
     */
    public String getValue() {
      throw new IllegalStateException("no value");
    }
  }

  private static final String SECRET = "4111-1111-1111-1111";

  private final Payloads payloads = Payloads.of(new JacksonJsonCodec());

  @Test
  @DisplayName("an object round-trips with its type and content type recorded on the message")
  void roundTrip() {
    Message m = payloads.message("orders", "o-1", new OrderCreated("o-1", 1250));

    assertThat(m.type()).isEqualTo(OrderCreated.class.getName());
    assertThat(m.key()).contains("o-1");
    assertThat(m.headers()).containsEntry(CloudEvents.CONTENT_TYPE, "application/json");
    assertThat(m.payloadUtf8()).isEqualTo("{\"orderId\":\"o-1\",\"cents\":1250}");
    assertThat(payloads.decode(m, "orders", OrderCreated.class))
        .isEqualTo(new OrderCreated("o-1", 1250));

    // Over the wire mapping every transport uses, too.
    Message back = MessageHeaders.fromWire(MessageHeaders.toWire(m), "o-1", m.payload());
    assertThat(payloads.decode(back, "orders", OrderCreated.class))
        .isEqualTo(new OrderCreated("o-1", 1250));
  }

  @Test
  @DisplayName("a handler of a supertype gets each message as the subtype its type header names")
  void dispatchByType() {
    Message created = payloads.message("orders", "o-1", new OrderCreated("o-1", 5));
    Message cancelled = payloads.message("orders", "o-1", new OrderCancelled("o-1", "late"));

    assertThat(payloads.decode(created, "orders", OrderEvent.class))
        .isEqualTo(new OrderCreated("o-1", 5));
    assertThat(payloads.decode(cancelled, "orders", OrderEvent.class))
        .isEqualTo(new OrderCancelled("o-1", "late"));
  }

  @Test
  @DisplayName("registered type names are recorded and resolved both ways")
  void registeredNames() {
    PayloadTypes types = new PayloadTypes().register("order.created", OrderCreated.class);
    Payloads named = Payloads.builder().defaultCodec(new JacksonJsonCodec()).types(types).build();

    Message m = named.message("orders", null, new OrderCreated("o-2", 7));
    assertThat(m.type()).isEqualTo("order.created");
    assertThat(named.decode(m, "orders", OrderEvent.class)).isEqualTo(new OrderCreated("o-2", 7));
    assertThatThrownBy(() -> types.register("order.created", OrderCancelled.class))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already stands");
  }

  @Test
  @DisplayName("undecodable bytes fail permanently; the reason names the type and describes the"
      + " bytes but never quotes them")
  void undecodableReasonHasNoPayload() {
    Message m = json(OrderCreated.class.getName(),
        "{\"orderId\":\"" + SECRET + "\",\"cents\":\"not a number " + SECRET + "\"}");

    assertThatThrownBy(() -> payloads.decode(m, "orders", OrderCreated.class))
        .isInstanceOf(PayloadConversionException.class)
        .isInstanceOf(PermanentFailureException.class)
        .hasNoCause()
        .hasMessageContaining(OrderCreated.class.getName())
        .hasMessageContaining(m.payloadSize() + " bytes")
        .hasMessageContaining("'application/json'")
        .hasMessageNotContaining(SECRET)
        .hasMessageNotContaining("not a number");
  }

  @Test
  @DisplayName("not JSON, blank, JSON null and trailing garbage each fail permanently")
  void badInputs() {
    for (String body : List.of("<xml>" + SECRET + "</xml>", "   ", "null",
        "{\"orderId\":\"a\",\"cents\":1} " + SECRET, "[" .repeat(5000))) {
      Message m = json(OrderCreated.class.getName(), body);
      assertThatThrownBy(() -> payloads.decode(m, "orders", OrderCreated.class))
          .as(body.length() > 40 ? body.substring(0, 40) : body)
          .isInstanceOf(PayloadConversionException.class)
          .hasMessageStartingWith("cannot convert the payload to " + OrderCreated.class.getName())
          .hasMessageNotContaining(SECRET);
    }
  }

  @Test
  @DisplayName("an oversize payload fails before the codec reads it")
  void oversize() {
    Payloads small = Payloads.builder().defaultCodec(new JacksonJsonCodec())
        .maxPayloadBytes(16).build();
    Message m = small.message("orders", null, new OrderCreated("o-3", 1));

    assertThatThrownBy(() -> small.decode(m, "orders", OrderCreated.class))
        .isInstanceOf(PayloadConversionException.class)
        .hasMessageContaining(m.payloadSize() + " bytes")
        .hasMessageContaining("larger than the limit of 16 bytes");
  }

  @Test
  @DisplayName("an unknown type header, a type of another family and another content type fail"
      + " permanently, naming the problem")
  void unknownTypeAndContentType() {
    Message unknown = json("com.example.Nope", "{\"orderId\":\"a\",\"cents\":1}");
    assertThatThrownBy(() -> payloads.decode(unknown, "orders", OrderCreated.class))
        .isInstanceOf(PayloadConversionException.class)
        .hasMessageContaining("unknown type header 'com.example.Nope'");

    Message string = json(String.class.getName(), "\"x\"");
    assertThatThrownBy(() -> payloads.decode(string, "orders", OrderEvent.class))
        .isInstanceOf(PayloadConversionException.class)
        .hasMessageContaining("unknown type header 'java.lang.String'");

    Message xml = Message.builder().type(OrderCreated.class.getName()).payload("<a/>")
        .header(CloudEvents.CONTENT_TYPE, "application/xml").build();
    assertThatThrownBy(() -> payloads.decode(xml, "orders", OrderCreated.class))
        .isInstanceOf(PayloadConversionException.class)
        .hasMessageContaining("content type 'application/xml'")
        .hasMessageContaining("codec reads application/json");

    Message charset = Message.builder().type(OrderCreated.class.getName())
        .payload("{\"orderId\":\"a\",\"cents\":1}")
        .header(CloudEvents.CONTENT_TYPE, "Application/JSON; charset=utf-8").build();
    assertThat(payloads.decode(charset, "orders", OrderCreated.class))
        .isEqualTo(new OrderCreated("a", 1));
  }

  @Test
  @DisplayName("an object the codec cannot write fails the append at once")
  void unencodable() {
    assertThatThrownBy(() -> payloads.message("orders", null, new Unwritable()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot encode a " + Unwritable.class.getName());
    assertThatThrownBy(() -> payloads.message("orders", null,
        Message.builder().type("t").payload("x").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is a Message");
  }

  private static Message json(String type, String body) {
    return Message.builder().type(type).payload(body.getBytes(StandardCharsets.UTF_8))
        .header(CloudEvents.CONTENT_TYPE, "application/json").build();
  }
}

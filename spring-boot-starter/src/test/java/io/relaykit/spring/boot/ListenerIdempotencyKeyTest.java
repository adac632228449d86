package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The stored idempotency keys of @RelaykitListener methods. */
class ListenerIdempotencyKeyTest {

  private static Message keyless(String id) {
    return Message.builder().id(id).type("order.placed").payload("{}").build();
  }

  private static Message keyed(String id, String key) {
    return Message.builder().id(id).type("order.placed").key(key).payload("{}").build();
  }

  @Test
  void anExpressionReadingKeyFailsOnAKeylessMessageInsteadOfSharingNullKey() {
    Function<Message, String> f = RelaykitListenerRegistry.businessKey("sms", "key + ':sms'");

    assertThat(f.apply(keyed("m1", "order-7"))).isEqualTo("listener:key:3:sms:order-7:sms");
    assertThatThrownBy(() -> f.apply(keyless("m2")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("message m2 has no key; the idempotencyKey expression 'key + ':sms'' reads key");
  }

  @Test
  void hasKeyGuardsAKeylessMessage() {
    Function<Message, String> f =
        RelaykitListenerRegistry.businessKey("sms", "(hasKey ? key : id) + ':sms'");

    assertThat(f.apply(keyless("m2"))).isEqualTo("listener:key:3:sms:m2:sms");
    assertThat(f.apply(keyed("m3", "k"))).isEqualTo("listener:key:3:sms:k:sms");
  }

  @Test
  void aNullOrBlankResultFailsNamingTheExpression() {
    assertThatThrownBy(() -> RelaykitListenerRegistry.businessKey("g", "headers['absent']")
        .apply(keyless("m4")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("the idempotencyKey expression 'headers['absent']' gave null for message m4");
    assertThatThrownBy(() -> RelaykitListenerRegistry.businessKey("g", "'  '")
        .apply(keyless("m5")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("gave a blank key for message m5");
  }

  @Test
  void theDefaultKeyIsNamespacedAndUnambiguous() {
    // Without the length prefix both would be "a:b:c".
    String one = RelaykitListenerRegistry.businessKey("a:b", "").apply(keyless("c"));
    String two = RelaykitListenerRegistry.businessKey("a", "").apply(keyless("b:c"));

    assertThat(one).isEqualTo("listener:id:3:a:b:c");
    assertThat(two).isEqualTo("listener:id:1:a:b:c");
    assertThat(one).isNotEqualTo(two).doesNotStartWith("http:");
  }

  @Test
  void customKeysAreNamespacedApartFromDefaultAndHttpKeys() {
    String custom = RelaykitListenerRegistry.businessKey("g", "'http:x'").apply(keyless("m"));

    assertThat(custom).isEqualTo("listener:key:1:g:http:x");
  }

  @Test
  void customKeysAreScopedToTheGroup() {
    // Two groups with one expression: each keeps its own key, so neither skips the other's work.
    String sms = RelaykitListenerRegistry.businessKey("sms", "key").apply(keyed("m1", "order-7"));
    String mail = RelaykitListenerRegistry.businessKey("mail", "key").apply(keyed("m1", "order-7"));

    assertThat(sms).isEqualTo("listener:key:3:sms:order-7");
    assertThat(mail).isEqualTo("listener:key:4:mail:order-7");
  }
}

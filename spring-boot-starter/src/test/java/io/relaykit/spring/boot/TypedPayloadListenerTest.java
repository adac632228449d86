package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.codec.PayloadConversionException;
import io.relaykit.codec.Payloads;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.jackson.JacksonJsonCodec;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * Typed payloads through the starter on the in-process transport and H2: {@code
 * TransactionalOutbox.append(destination, key, object)} in, a {@link RelaykitListener} method
 * taking the payload type (beside the Message or Delivery) out, and payloads that cannot be
 * converted dead-lettered at once with a reason that describes, never quotes, the bytes. One
 * context for the class (a context start is most of the cost); each test uses its own keys.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TypedPayloadListenerTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String SECRET = "4111-1111-1111-1111";

  /** What every order event is. */
  public interface OrderEvent {
    /**
     * The order.
     *
     * @return its id
     */
    String orderId();
  }

  /** An order was placed. */
  public record OrderPlaced(String orderId, long cents) implements OrderEvent {}

  /** An order was cancelled. */
  public record OrderCancelled(String orderId, String why) implements OrderEvent {}

  /** Two typed listeners: one by supertype (dispatch by type), one by concrete type. */
  public static class TypedInbox {
    final List<OrderEvent> events = new CopyOnWriteArrayList<>();
    final Map<String, String> typeOf = new ConcurrentHashMap<>();
    final List<OrderPlaced> placed = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "${test.destination}", group = "${test.group}")
    void onEvent(OrderEvent event, Message message) {
      typeOf.put(event.orderId() + "/" + event.getClass().getSimpleName(), message.type());
      events.add(event);
    }

    @RelaykitListener(destination = "${test.destination}", group = "${test.group}-placed",
        codec = "application/json")
    void onPlaced(Delivery delivery, OrderPlaced placed) {
      assertThat(delivery.message().type()).isEqualTo(OrderPlaced.class.getName());
      this.placed.add(placed);
    }
  }

  /** The application. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(TypedInbox.class)
  public static class TypedApp {}

  private ConfigurableApplicationContext ctx;
  private String destination;
  private String group;

  @BeforeAll
  void start() {
    destination = unique("typed");
    group = unique("g");
    ctx = new SpringApplicationBuilder(TypedApp.class).properties(
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        "relaykit.storage=h2",
        "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
        "relaykit.relay.poll-interval=50ms",
        "spring.main.web-application-type=none",
        "test.destination=" + destination,
        "test.group=" + group).run();
  }

  @AfterAll
  void stop() {
    ctx.close();
  }

  private Message append(String key, Object payload) {
    TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
    return new TransactionTemplate(ctx.getBean(
        org.springframework.transaction.PlatformTransactionManager.class))
        .execute(s -> outbox.append(destination, key, payload));
  }

  private void appendRaw(Message message) {
    TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
    new TransactionTemplate(ctx.getBean(
        org.springframework.transaction.PlatformTransactionManager.class))
        .executeWithoutResult(s -> outbox.append(destination, message));
  }

  @Test
  @DisplayName("the starter's codec is JSON on the application's JsonMapper bean")
  void jsonOnTheApplicationsMapper() {
    Payloads payloads = ctx.getBean(Payloads.class);
    assertThat(payloads.defaultCodec()).isInstanceOf(JacksonJsonCodec.class);
    assertThat(((JacksonJsonCodec) payloads.defaultCodec()).mapper())
        .isSameAs(ctx.getBean(JsonMapper.class));
    assertThat(ctx.getBean(TransactionalOutbox.class).payloads()).isSameAs(payloads);
  }

  @Test
  @DisplayName("typed appends reach typed listeners, each as the subtype its type header names")
  void sendTypedHandleTyped() {
    TypedInbox inbox = ctx.getBean(TypedInbox.class);
    String order = unique("o");
    Message placed = append(order, new OrderPlaced(order, 1250));
    append(order, new OrderCancelled(order, "changed my mind"));

    assertThat(placed.type()).isEqualTo(OrderPlaced.class.getName());
    assertThat(placed.headers()).containsEntry(CloudEvents.CONTENT_TYPE, "application/json");
    Await.until(WAIT, "both events reach the supertype listener",
        () -> inbox.events.stream().filter(e -> e.orderId().equals(order)).count() == 2);
    assertThat(inbox.events.stream().filter(e -> e.orderId().equals(order)))
        .containsExactly(new OrderPlaced(order, 1250),
            new OrderCancelled(order, "changed my mind"));
    assertThat(inbox.typeOf).containsEntry(order + "/OrderPlaced", OrderPlaced.class.getName())
        .containsEntry(order + "/OrderCancelled", OrderCancelled.class.getName());
    Await.until(WAIT, "the placed event reaches the concrete listener",
        () -> inbox.placed.contains(new OrderPlaced(order, 1250)));
  }

  @Test
  @DisplayName("a poison payload is dead-lettered at once, its reason naming the target type and"
      + " describing the bytes, never quoting them; the listener goes on")
  void poisonIsDeadLettered() {
    TypedInbox inbox = ctx.getBean(TypedInbox.class);
    String poisonId = unique("poison");
    byte[] poison = ("{\"orderId\":\"" + SECRET + "\",\"cents\":\"" + SECRET + "\"")
        .getBytes(StandardCharsets.UTF_8);
    String order = unique("o");
    appendRaw(Message.builder().id(poisonId).type(OrderPlaced.class.getName()).key(order)
        .payload(poison).header(CloudEvents.CONTENT_TYPE, "application/json").build());
    String unknownId = unique("unknown");
    appendRaw(Message.builder().id(unknownId).type("com.example.Refund").key(unique("o"))
        .payload("{\"orderId\":\"o-3\"}").header(CloudEvents.CONTENT_TYPE, "application/json")
        .build());
    append(order, new OrderPlaced(order, 5));

    DeadLetterStore deadLetters = ctx.getBean(DeadLetterStore.class);
    Await.until(WAIT, "the poison message is dead-lettered by the supertype listener's group",
        () -> !deadLetters.list(DeadLetterQuery.all().withMessageId(poisonId).withGroup(group))
            .isEmpty());
    DeadLetter dead = deadLetters.list(DeadLetterQuery.all().withMessageId(poisonId)
        .withGroup(group)).get(0);
    assertThat(dead.attempts()).as("not retried").isEqualTo(1);
    assertThat(dead.exceptionClass()).isEqualTo(PayloadConversionException.class.getName());
    assertThat(dead.reason() + " " + dead.exceptionMessage())
        .contains(OrderEvent.class.getName())
        .contains(poison.length + " bytes")
        .contains("'application/json'")
        .doesNotContain(SECRET);

    Await.until(WAIT, "the unknown type is dead-lettered",
        () -> !deadLetters.list(DeadLetterQuery.all().withMessageId(unknownId).withGroup(group))
            .isEmpty());
    assertThat(deadLetters.list(DeadLetterQuery.all().withMessageId(unknownId).withGroup(group))
        .get(0).reason()).contains("unknown type header 'com.example.Refund'");

    // The key's next event is handled: the loop did not stop at the poison.
    Await.until(WAIT, "the next event of the key is handled",
        () -> inbox.events.contains(new OrderPlaced(order, 5)));
  }

  @Test
  @DisplayName("a typed append of an object the codec cannot write throws and writes nothing")
  void unencodableAppendThrows() {
    assertThatThrownBy(() -> append("o-9", new Object() {
      @SuppressWarnings("unused")
      public String getValue() {
        throw new IllegalStateException("no value");
      }
    })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot encode");
  }
}

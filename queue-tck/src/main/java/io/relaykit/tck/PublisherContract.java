package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.queue.Priority;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link Publisher} keeps: subclass it and implement {@link #createPublisher},
 * {@link #newDestination} and {@link #readBack} (how to see what really reached a destination:
 * a fresh consumer of the topic or queue).
 *
 * <p>Confirms are awaited for {@link #confirmTimeout()}; read-back waits use the same budget.
 */
public abstract class PublisherContract {

  /** For a subclass that binds the kit to one backend. */
  protected PublisherContract() {}

  private Publisher publisher;

  /**
   * A new publisher; called before each test, and the kit closes it after.
   *
   * @return an open publisher
   */
  protected abstract Publisher createPublisher();

  /**
   * A destination no other test uses (a topic or queue with a random suffix), ready to receive and
   * to be read back with {@link #readBack}; create it on the broker here if the transport needs it.
   *
   * @return the destination's name
   */
  protected abstract String newDestination();

  /**
   * Reads what reached {@code destination}, waiting until at least {@code expected} messages have
   * arrived or {@code timeout} passed, and returns every message that arrived, in the order the
   * transport delivers them (per key: publish order). Fails (AssertionError) if fewer arrived.
   *
   * @param destination a destination from {@link #newDestination}
   * @param expected how many messages to wait for
   * @param timeout how long to wait for them at most
   * @return every message that arrived, possibly more than {@code expected}
   */
  protected abstract List<Message> readBack(String destination, int expected, Duration timeout);

  /**
   * How long a confirm or a read-back may take.
   *
   * @return 30 s by default
   */
  protected Duration confirmTimeout() {
    return Duration.ofSeconds(30);
  }

  @BeforeEach
  void createFreshPublisher() {
    publisher = createPublisher();
  }

  @AfterEach
  void closePublisher() {
    publisher.close();
  }

  /**
   * The publisher under test.
   *
   * @return this test's publisher, from {@link #createPublisher()}
   */
  protected Publisher publisher() {
    return publisher;
  }

  private static Message message(String key, int n) {
    return Message.builder().type("order.paid").key(key).payload("{\"n\":" + n + "}").build();
  }

  private PublishReceipt confirm(CompletableFuture<PublishReceipt> future) {
    try {
      return future.get(confirmTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new AssertionError("publish failed: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new AssertionError("no confirm within " + confirmTimeout(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  private static List<String> ids(List<Message> messages) {
    List<String> ids = new ArrayList<>();
    for (Message m : messages) {
      ids.add(m.id());
    }
    return ids;
  }

  @Nested
  @DisplayName("confirms")
  class Confirms {

    @Test
    @DisplayName("the confirm completes with a receipt naming the destination and the message id")
    void receipt() {
      String destination = newDestination();
      Message m = message("order-1", 1);

      PublishReceipt receipt = confirm(publisher.publish(destination, m));

      assertThat(receipt.destination()).isEqualTo(destination);
      assertThat(receipt.messageId()).isEqualTo(m.id());
      assertThat(receipt.position()).isNotNull();
      assertThat(ids(readBack(destination, 1, confirmTimeout()))).containsExactly(m.id());
    }

    @Test
    @DisplayName("many concurrent publishes are all confirmed and all delivered")
    void concurrentPublishes() {
      String destination = newDestination();
      int threads = 4;
      int perThread = 50;
      List<List<String>> published = Race.run(threads, confirmTimeout(), t -> {
        List<CompletableFuture<PublishReceipt>> futures = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < perThread; i++) {
          Message m = message(i % 3 == 0 ? null : "key-" + t + "-" + (i % 5), i);
          ids.add(m.id());
          futures.add(publisher.publish(destination, m));
        }
        for (int i = 0; i < perThread; i++) {
          assertThat(confirm(futures.get(i)).messageId()).isEqualTo(ids.get(i));
        }
        return ids;
      });

      Set<String> expected = new HashSet<>();
      published.forEach(expected::addAll);
      List<Message> arrived = readBack(destination, threads * perThread, confirmTimeout());
      assertThat(new HashSet<>(ids(arrived))).isEqualTo(expected);
    }
  }

  @Nested
  @DisplayName("the envelope")
  class Envelope {

    @Test
    @DisplayName("every field survives: id, type, schema version, key, headers, payload bytes,"
        + " createdAt, expiresAt, priority and trace id")
    void everyField() {
      String destination = newDestination();
      byte[] payload = new byte[512];
      for (int i = 0; i < payload.length; i++) {
        payload[i] = (byte) (i * 7);
      }
      Instant created = Instant.parse("2026-03-01T12:00:00.123456Z");
      Message m = Message.builder()
          .id("pub-" + UUID.randomUUID())
          .type("order.paid")
          .schemaVersion(4)
          .key("order-42")
          .payload(payload)
          .header("tenant", "acme")
          .header("x-note", "ünïcödé; a=b, \"c\"")
          .header("empty", "")
          .createdAt(created)
          .expiresAt(Instant.now().plus(Duration.ofDays(1)).truncatedTo(
              java.time.temporal.ChronoUnit.MILLIS))
          .priority(Priority.CRITICAL)
          .traceId("4bf92f3577b34da6a3ce929d0e0e4736")
          .build();

      confirm(publisher.publish(destination, m));

      Message got = readBack(destination, 1, confirmTimeout()).get(0);
      assertThat(got.id()).isEqualTo(m.id());
      assertThat(got.type()).isEqualTo("order.paid");
      assertThat(got.schemaVersion()).isEqualTo(4);
      assertThat(got.key()).contains("order-42");
      assertThat(got.headers()).containsExactlyInAnyOrderEntriesOf(m.headers());
      assertThat(got.payload()).isEqualTo(payload);
      assertThat(got.createdAt()).isEqualTo(created);
      assertThat(got.expiresAt()).isEqualTo(m.expiresAt());
      assertThat(got.priority()).isEqualTo(Priority.CRITICAL);
      assertThat(got.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
      assertThat(got).isEqualTo(m);
    }

    @Test
    @DisplayName("a message without key or expiry arrives without them")
    void optionalFieldsAbsent() {
      String destination = newDestination();
      Message m = Message.builder().type("page.viewed").payload(new byte[] {42})
          .priority(Priority.LOW).build();

      confirm(publisher.publish(destination, m));

      Message got = readBack(destination, 1, confirmTimeout()).get(0);
      assertThat(got.key()).isEmpty();
      assertThat(got.expiresAt()).isEmpty();
      assertThat(got.priority()).isEqualTo(Priority.LOW);
      assertThat(got.payload()).containsExactly(42);
    }
  }

  @Nested
  @DisplayName("order")
  class Order {

    @Test
    @DisplayName("messages of one key, each published after the previous confirm, arrive in"
        + " publish order")
    void sameKeyInOrder() {
      String destination = newDestination();
      List<String> a = new ArrayList<>();
      List<String> b = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        Message ma = message("key-a", i);
        Message mb = message("key-b", i);
        confirm(publisher.publish(destination, ma));
        confirm(publisher.publish(destination, mb));
        a.add(ma.id());
        b.add(mb.id());
      }

      List<Message> arrived = readBack(destination, 60, confirmTimeout());

      List<String> gotA = new ArrayList<>();
      List<String> gotB = new ArrayList<>();
      for (Message m : arrived) {
        (m.key().orElseThrow().equals("key-a") ? gotA : gotB).add(m.id());
      }
      assertThat(gotA).containsExactlyElementsOf(a);
      assertThat(gotB).containsExactlyElementsOf(b);
    }
  }

  @Nested
  @DisplayName("close and bad input")
  class CloseAndBadInput {

    @Test
    @DisplayName("a publish after close fails cleanly: it throws IllegalStateException or"
        + " PublishException, or its future fails with PublishException")
    void publishAfterClose() {
      String destination = newDestination();
      Message before = message("k", 0);
      confirm(publisher.publish(destination, before));
      assertThat(ids(readBack(destination, 1, confirmTimeout()))).containsExactly(before.id());
      publisher.close();
      Message after = message("k", 1);

      Throwable failure = null;
      try {
        CompletableFuture<PublishReceipt> f = publisher.publish(destination, after);
        assertThat(f).failsWithin(confirmTimeout());
        failure = f.handle((r, e) -> e instanceof CompletionException ? e.getCause() : e).join();
        assertThat(failure).isInstanceOf(PublishException.class);
      } catch (IllegalStateException | PublishException e) {
        failure = e;
      }
      assertThat(failure).isNotNull();
      assertThat(failure.getMessage()).isNotBlank();
    }

    @Test
    @DisplayName("closing twice is harmless")
    void closeTwice() {
      publisher.close();
      publisher.close();
    }

    @Test
    @DisplayName("a null or blank destination, or a null message, throws IllegalArgumentException"
        + " at once")
    void badArguments() {
      Message m = message("k", 0);
      assertThatThrownBy(() -> publisher.publish(null, m))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("destination");
      assertThatThrownBy(() -> publisher.publish("  ", m))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("destination");
      assertThatThrownBy(() -> publisher.publish(newDestination(), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message");
    }
  }
}

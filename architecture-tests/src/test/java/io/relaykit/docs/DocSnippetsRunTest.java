package io.relaykit.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.jackson.JacksonJsonCodec;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.poller.HttpAnswer;
import io.relaykit.queue.BatchResult;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.tck.Await;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the docs' snippets that need no broker, as written, and checks what they did: the code a
 * reader copies works, not only compiles.
 */
class DocSnippetsRunTest {

  @Test
  @DisplayName("docs/report-queue.md: a CRITICAL event is journaled and sent in a batch")
  void reportQueue(@TempDir Path dir) throws Exception {
    List<QueuedEvent> sent = new CopyOnWriteArrayList<>();
    ReportQueueSnippets.Running running = ReportQueueSnippets.reportQueue(dir, batch -> {
      sent.addAll(batch);
      return BatchResult.allOk(batch);
    }, "payment-1", "{\"cents\":1250}");
    try {
      Await.until(Duration.ofSeconds(30), "the dispatcher sends payment-1", () -> !sent.isEmpty());
      assertThat(sent).extracting(QueuedEvent::eventId).containsExactly("payment-1");
    } finally {
      running.dispatcher().close(Duration.ofSeconds(5));
      running.journal().close();
    }
  }

  @Test
  @DisplayName("docs/status-polling.md: the server side answers 202 with the status URL")
  void statusServer() {
    HttpAnswer answer = StatusPollingSnippets.server("order-42");
    assertThat(answer.status()).isEqualTo(202);
    assertThat(answer.headers()).containsEntry("Location", "/orders/order-42/status");
    assertThat(answer.body()).contains("order-42");
  }

  @Test
  @DisplayName("docs/interop.md: the foreign mapping names the headers it reads")
  void foreignMapping() {
    SubscriptionSpec spec = InteropSnippets.foreign();
    assertThat(spec.inbound().idHeader()).contains("event-id");
    assertThat(spec.inbound().typeHeader()).contains("event-type");
  }

  @Test
  @DisplayName("docs/configuration.md: settings come from relaykit.* properties")
  void settings() {
    Properties properties = new Properties();
    properties.setProperty("relaykit.jdbc.url", "jdbc:h2:mem:docs-settings");
    properties.setProperty("relaykit.retry.max-attempts", "7");
    assertThat(ConfigurationSnippets.settings(properties)).isNotNull();
  }

  @Test
  @DisplayName("docs/payloads.md: a typed event is appended to both outboxes and decoded by type")
  void payloads() throws Exception {
    String run = UUID.randomUUID().toString();
    InMemoryOutboxStore memory = new InMemoryOutboxStore();
    try (JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:mem:docs-payloads-" + run).build(), InstantSource.system());
        Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      MessageHandler handler = PayloadSnippets.plainJava(new JacksonJsonCodec(), memory,
          storage.outboxStore(), tx, new PayloadSnippets.Order("order-42", 1250));
      tx.commit();
      List<Message> appended = memory.claim("docs", 10, Duration.ofSeconds(30),
          InstantSource.system().instant()).stream().map(OutboxRecord::message).toList();
      assertThat(appended).extracting(Message::type).containsExactly("order.placed");
      handler.handle(Delivery.first(appended.get(0), "orders"));
    }
  }
}

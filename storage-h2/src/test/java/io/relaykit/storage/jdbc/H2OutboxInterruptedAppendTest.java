package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Outbox appends run on the caller's thread and connection by design. On an H2 file database an
 * interrupt of that thread during the write must fail at most that caller's append, never close
 * the database for every other thread (relaykit's H2 URL uses H2's {@code retry:} file system).
 */
@DisplayName("an outbox on an H2 file database, appended to by an interrupted caller")
class H2OutboxInterruptedAppendTest {

  @TempDir
  Path tempDir;

  private static Message message(int i) {
    return Message.builder().type("order.paid").key(i % 2 == 0 ? "k-" + (i % 5) : null)
        .payload("x".repeat(20_000) + i).build();
  }

  @Test
  @DisplayName("an appending caller interrupted before each of 100 appends leaves the database open:"
      + " other threads append, claim and mark sent afterwards, and every committed row is there")
  void interruptedAppenderClosesNothing() throws Exception {
    JdbcStorageConfig config = JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:file:" + tempDir.resolve("outbox").toAbsolutePath() + ";CACHE_SIZE=64")
        .tablePrefix("intr_").build();
    try (JdbcStorage storage = JdbcStorage.open(config, InstantSource.system())) {
      JdbcOutboxStore outbox = storage.outboxStore();
      AtomicInteger committed = new AtomicInteger();
      Thread caller = new Thread(() -> {
        for (int i = 0; i < 100; i++) {
          try (Connection c = storage.dataSource().getConnection()) {
            // Interrupted after taking its connection: the interrupt lands in H2's file I/O.
            Thread.currentThread().interrupt();
            outbox.append(c, "orders", message(i));
            committed.incrementAndGet();
          } catch (Exception e) {
            // An interrupted caller's append may fail; what matters is everyone else.
          }
          Thread.interrupted();
        }
      }, "interrupted-appender");
      caller.start();
      caller.join(TimeUnit.SECONDS.toMillis(60));
      assertThat(caller.isAlive()).isFalse();

      try (Connection c = storage.dataSource().getConnection()) {
        outbox.append(c, "orders", message(1_000));
      }
      List<OutboxRecord> claimed = outbox.claim("relay", 500, Duration.ofMinutes(1),
          InstantSource.system().instant());
      assertThat(claimed).isNotEmpty();
      assertThat(outbox.markSent("relay", claimed.stream().map(OutboxRecord::sequence).toList(),
          InstantSource.system().instant())).isEqualTo(claimed.size());
      long unsent = outbox.stats(InstantSource.system().instant()).unsent();
      long sent = outbox.stats(InstantSource.system().instant()).sent();
      assertThat(unsent + sent).as("every committed append is stored")
          .isGreaterThanOrEqualTo(committed.get() + 1);
    }
  }
}

package io.relaykit.storage.jdbc;

import io.relaykit.message.Message;
import java.sql.Connection;
import java.time.InstantSource;

/**
 * The child process of {@link ProcessKillTest}: appends outbox rows to an H2 file database, one
 * committed transaction each, and prints {@code committed <n>} after each commit returns, until it
 * is killed.
 */
public final class OutboxWriterMain {
  private OutboxWriterMain() {}

  public static void main(String[] args) throws Exception {
    JdbcStorageConfig config = JdbcStorageConfig.builder().jdbcUrl(args[0]).tablePrefix(args[1])
        .poolSize(1).build();
    try (JdbcStorage storage = JdbcStorage.open(config, InstantSource.system())) {
      JdbcOutboxStore outbox = storage.outboxStore();
      for (int i = 0; ; i++) {
        try (Connection c = storage.dataSource().getConnection()) {
          c.setAutoCommit(false);
          outbox.append(c, "orders", Message.builder().id("m-" + i).type("order.placed")
              .key("k" + (i % 10)).payload("order " + i).build());
          c.commit();
        }
        System.out.println("committed " + (i + 1));
        System.out.flush();
      }
    }
  }
}

package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * An auto-commit outbox append (a keyed message: it gets a transaction of its own on the caller's
 * connection) whose session the server ends just before the commit: the caller sees the commit's
 * error, not the "connection closed" of the rollback or of the auto-commit reset that follow it.
 */
@DisplayName("an auto-commit PostgreSQL outbox append whose session ends at the commit")
class JdbcOutboxBrokenConnectionTest {

  @Test
  @DisplayName("the commit's failure is the error thrown; a retry with the request id on a new"
      + " connection writes one row")
  void commitFailureKept() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = JdbcStorage.open(db.dataSource(), Dialect.POSTGRESQL, prefix,
        Duration.ofDays(1), InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    String schema;
    try (Connection c = db.dataSource().getConnection()) {
      schema = c.getSchema();
    }
    String url = TestDatabase.postgresUrl() + "&currentSchema=" + schema;
    Message m = Message.builder().id("m-1").type("order.paid").key("o-1").payload("{}").build();
    AtomicReference<Throwable> commitFailure = new AtomicReference<>();

    try (Connection real = DriverManager.getConnection(url)) {
      int pid;
      try (Statement s = real.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      Connection dying = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, method, args) -> {
            if (method.getName().equals("commit")) {
              try (Connection other = DriverManager.getConnection(url);
                  Statement s = other.createStatement()) {
                s.execute("SELECT pg_terminate_backend(" + pid + ")");
              }
            }
            try {
              return method.invoke(real, args);
            } catch (InvocationTargetException e) {
              if (method.getName().equals("commit")) {
                commitFailure.set(e.getCause());
              }
              throw e.getCause();
            }
          });

      assertThatThrownBy(() -> outbox.append(dying, "orders", m, "req-1"))
          .isInstanceOf(SQLException.class)
          .satisfies(e -> assertThat(e).as("the commit's own error").isSameAs(commitFailure.get()));
    }

    try (Connection c = db.dataSource().getConnection()) {
      outbox.append(c, "orders", m, "req-1");
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(1);
  }
}

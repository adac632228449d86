package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotentAnswer;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageException;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The answer table on the database's clock, on H2 and PostgreSQL. */
@DisplayName("JdbcIdempotentAnswerStore")
class JdbcIdempotentAnswerStoreTest {

  abstract static class Kit {
    final String prefix = AbstractOutboxTransactionTest.unique("rka") + "_";

    abstract DataSource dataSource();

    JdbcIdempotentAnswerStore store(Duration retention) {
      JdbcStorage storage = RelaykitAutoConfiguration.openOn(dataSource(), Settings.builder()
          .values(Map.of("relaykit.jdbc.table-prefix", prefix)).build());
      return new JdbcIdempotentAnswerStore(storage.dataSource(), storage.dialect(),
          storage.tablePrefix(), retention);
    }

    static IdempotentAnswer answer(String body) {
      return IdempotentAnswer.of("fp", 201, Map.of("Location", List.of("/o/1")),
          body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    @DisplayName("saves, replaces and finds by key; a second instance on the table sees it")
    void roundTrip() {
      JdbcIdempotentAnswerStore s = store(Duration.ofHours(1));
      s.save("k1", answer("a"));
      s.save("k1", answer("b"));
      assertThat(s.find("k1")).contains(answer("b"));
      assertThat(s.find("k2")).isEmpty();
      assertThat(store(Duration.ofHours(1)).find("k1")).contains(answer("b"));
    }

    @Test
    @DisplayName("an answer past its retention (database clock) is not found, and purged")
    void expiry() {
      JdbcIdempotentAnswerStore s = store(Duration.ofMillis(1));
      s.save("old", answer("a"));
      Await.until(Duration.ofSeconds(10), "the answer expires", () -> s.find("old").isEmpty());
      assertThat(s.purgeExpired()).isEqualTo(1);
      assertThat(s.purgeExpired()).isZero();
    }

    @Test
    @DisplayName("a corrupt row is an exception naming the key and the table")
    void corrupt() throws Exception {
      JdbcIdempotentAnswerStore s = store(Duration.ofHours(1));
      s.save("bad", answer("a"));
      try (Connection c = dataSource().getConnection();
          var ps = c.prepareStatement("UPDATE " + s.table() + " SET answer = ? WHERE"
              + " answer_key = ?")) {
        ps.setBytes(1, new byte[] {9, 9});
        ps.setString(2, "bad");
        ps.executeUpdate();
      }
      assertThatThrownBy(() -> s.find("bad")).isInstanceOf(JdbcStorageException.class)
          .hasMessageContaining("Idempotency-Key bad").hasMessageContaining(s.table())
          .hasMessageContaining("format 9");
    }
  }

  @Nested
  @DisplayName("on H2")
  class OnH2 extends Kit {
    private final JdbcDataSource ds = new JdbcDataSource();

    OnH2() {
      ds.setURL("jdbc:h2:mem:" + prefix + "db;DB_CLOSE_DELAY=-1");
    }

    @Override
    DataSource dataSource() {
      return ds;
    }
  }

  @Nested
  @DisplayName("on PostgreSQL")
  class OnPostgres extends Kit {
    private final PGSimpleDataSource ds = new PGSimpleDataSource();

    OnPostgres() {
      ds.setURL(PostgresOutboxTransactionTest.URL);
      ds.setUser("postgres");
    }

    @Override
    DataSource dataSource() {
      return ds;
    }
  }
}

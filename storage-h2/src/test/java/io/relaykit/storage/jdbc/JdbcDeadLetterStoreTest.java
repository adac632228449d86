package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The JDBC dead-letter store's own guarantees, on H2 (memory and file) and PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcDeadLetterStoreTest {

  private final List<TestDatabase> databases = new ArrayList<>();
  private final FakeClock clock = new FakeClock();

  @BeforeAll
  void openDatabases(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void closeDatabases() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private DeadLetter deadLetter(String id, String body) {
    Message m = Message.builder().id(id).type("order.paid").key("k-" + id).payload(body)
        .createdAt(clock.instant()).build();
    return new DeadLetter(m, "orders", "attempts exhausted (5 of 5)", null, null, 5,
        clock.instant(), clock.instant().plusSeconds(1));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a row whose envelope no longer decodes is listed and found with a stand-in,"
      + " and hides no other dead letter")
  void corruptRowIsShownNotFatal(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcDeadLetterStore store = storage.deadLetterStore();
    store.add(deadLetter("good-1", "one"));
    store.add(deadLetter("bad-1", "raw body"));
    store.add(deadLetter("good-2", "two"));
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE " + storage.tablePrefix()
            + "dead_letter SET headers = ? WHERE message_id = ?")) {
      ps.setString(1, "12:relaykit-id");
      ps.setString(2, "bad-1");
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }

    assertThat(store.list(DeadLetterQuery.all())).extracting(DeadLetter::messageId)
        .containsExactlyInAnyOrder("good-1", "bad-1", "good-2");
    DeadLetter bad = store.list(DeadLetterQuery.all().withMessageId("bad-1"))
        .stream().findFirst().orElseThrow();
    assertThat(bad.reason()).isEqualTo("attempts exhausted (5 of 5)");
    assertThat(bad.attempts()).isEqualTo(5);
    assertThat(bad.message().type()).isEqualTo(JdbcOutboxStore.UNDECODABLE_TYPE);
    assertThat(bad.message().key()).contains("k-bad-1");
    assertThat(bad.message().payload()).isEqualTo("raw body".getBytes(StandardCharsets.UTF_8));
    assertThat(bad.message().headers())
        .containsEntry(JdbcOutboxStore.RAW_ENVELOPE_HEADER, "12:relaykit-id")
        .containsEntry(JdbcDeadLetterStore.ORIGINAL_TYPE_HEADER, "order.paid")
        .containsKey(JdbcDeadLetterStore.DECODE_ERROR_HEADER);
    assertThat(store.list(DeadLetterQuery.all().withMessageId("bad-1"))
        .stream().findFirst().orElseThrow().message().traceId())
        .as("the same stand-in on every read").isEqualTo(bad.message().traceId());
    assertThat(store.list(DeadLetterQuery.all().withMessageId("good-2"))
        .stream().findFirst().orElseThrow().message().payloadUtf8()).isEqualTo("two");
    assertThat(store.remove(bad.id())).isPresent();
    assertThat(store.count(DeadLetterQuery.all())).isEqualTo(2);
  }
}

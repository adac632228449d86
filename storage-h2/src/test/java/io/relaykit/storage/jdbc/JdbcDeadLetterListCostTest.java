package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What a filtered page of dead letters reads, from the database's own plans (EXPLAIN ANALYZE of
 * the store's real statement: rows read, not time), beside 10 000 dead letters on H2 and
 * PostgreSQL; and that the pages are the model's ({@link InMemoryDeadLetterStore} holding the
 * same dead letters), keyset paging included, also while dead letters come and go between pages.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcDeadLetterListCostTest {
  private static final int DEAD_LETTERS = 10_000;
  private static final int PAGE = 50;
  /** What a read may add to the page: the row that tells the scan to stop, and a little slack. */
  private static final int SLACK = 5;
  private static final Instant T0 = Instant.parse("2026-03-01T12:00:00Z");
  static final String[] SOURCES = {"orders", "payments", "audit", "shipping", "email", "sms",
      "invoices"};
  static final String[] GROUPS = {null, "billing", "fulfilment", "analytics"};
  static final String[] EXCEPTIONS = {"java.io.IOException",
      "java.util.concurrent.TimeoutException", "java.lang.IllegalStateException",
      "java.net.ConnectException", null};
  static final String[] TYPES = {"order.paid", "order.shipped", "order.refunded"};

  private final FakeClock clock = new FakeClock();
  private final List<Fixture> fixtures = new ArrayList<>();

  /** One database holding the 10 000 dead letters, and the model holding the same. */
  record Fixture(TestDatabase db, JdbcDeadLetterStore store, InMemoryDeadLetterStore model) {
    @Override
    public String toString() {
      return db.toString();
    }
  }

  @BeforeAll
  void open(@TempDir Path tempDir) throws SQLException {
    for (TestDatabase.Kind kind : List.of(TestDatabase.Kind.H2_MEMORY,
        TestDatabase.Kind.POSTGRESQL)) {
      TestDatabase db = TestDatabase.open(kind, tempDir);
      String prefix = TestDatabase.newPrefix();
      JdbcDeadLetterStore store = (JdbcDeadLetterStore)
          db.storage(prefix, Duration.ofDays(7), clock).deadLetterStore();
      InMemoryDeadLetterStore model = new InMemoryDeadLetterStore(clock);
      List<DeadLetter> all = new ArrayList<>(DEAD_LETTERS);
      for (int i = 0; i < DEAD_LETTERS; i++) {
        DeadLetter d = deadLetter(i);
        all.add(d);
        model.add(d);
      }
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        // The store's own statement, in batches: one round trip per 500 rows.
        store.addAll(c, all, 500);
        c.commit();
      }
      if (kind == TestDatabase.Kind.POSTGRESQL) {
        // As autovacuum would have: plans are chosen on statistics.
        try (Connection c = db.connection(); Statement s = c.createStatement()) {
          s.execute("ANALYZE " + prefix + "dead_letter");
        }
      }
      fixtures.add(new Fixture(db, store, model));
    }
  }

  @AfterAll
  void close() {
    fixtures.forEach(f -> f.db().close());
  }

  Stream<Fixture> fixtures() {
    return fixtures.stream();
  }

  /**
   * Dead letter {@code i}: source, group, exception class and type cycle with coprime periods
   * (7, 4, 5, 3), so every combination occurs, each as often; two dead letters share each last-failure time,
   * so ties are ordered by id.
   */
  static DeadLetter deadLetter(int i) {
    Message m = Message.builder().id(String.format("m-%05d", (i * 7_919) % DEAD_LETTERS))
        .type(TYPES[i % 3]).payload("{\"n\":" + i + "}").createdAt(T0)
        .traceId(String.format("%032x", i + 1)).build();
    Instant at = T0.plusSeconds(i / 2);
    String exception = EXCEPTIONS[i % 5];
    return new DeadLetter(m, SOURCES[i % 7], GROUPS[i % 4],
        "attempts exhausted (5 of 5): " + (exception == null ? "rejected" : exception),
        exception, exception == null ? null : "failed", 5, at.minusSeconds(1), at);
  }

  /**
   * Rows the statement reads. PostgreSQL: the rows each scan node returned (times its loops) plus
   * those its filters removed; the Limit and Sort nodes above pass rows on and are not counted.
   * H2: the scan counts it reports.
   */
  static long rowsRead(Dialect dialect, String plan) {
    long read = 0;
    if (dialect == Dialect.POSTGRESQL) {
      for (String node : plan.split("\"Node Type\": ")) {
        if (!node.startsWith("\"") || !node.substring(0, node.indexOf('"', 1)).contains("Scan")) {
          continue;
        }
        Matcher m = Pattern.compile("\"Actual Rows\": (\\d+),\\s*\"Actual Loops\": (\\d+)")
            .matcher(node);
        if (m.find()) {
          read += Long.parseLong(m.group(1)) * Long.parseLong(m.group(2));
        }
        Matcher f = Pattern.compile("\"Rows Removed by (?:Filter|Index Recheck)\": (\\d+)")
            .matcher(node);
        while (f.find()) {
          read += Long.parseLong(f.group(1));
        }
      }
    } else {
      Matcher m = Pattern.compile("scanCount: (\\d+)").matcher(plan);
      while (m.find()) {
        read += Long.parseLong(m.group(1));
      }
    }
    return read;
  }

  /** The plan of the statement {@link JdbcDeadLetterStore#list} runs for {@code q}, executed. */
  static String explain(Fixture f, DeadLetterQuery q) throws SQLException {
    try (Connection c = f.db().connection()) {
      c.setAutoCommit(false);
      try {
        return f.store().explainList(c, q);
      } finally {
        c.rollback();
      }
    }
  }

  /** The position {@code depth} dead letters into {@code q}'s order (from the model). */
  static DeadLetterQuery.Position deep(Fixture f, DeadLetterQuery q, int depth) {
    List<DeadLetter> all = f.model().list(q.withPage(depth, 1));
    assertThat(all).as("a dead letter %d deep into %s", depth, q).hasSize(1);
    return DeadLetterQuery.Position.of(all.get(0));
  }

  static List<DeadLetterQuery> singleIndexQueries() {
    DeadLetterQuery newest = DeadLetterQuery.all().withPage(0, PAGE).withNewestFirst(true);
    return List.of(
        newest.withSource("payments"),
        newest.withSource("payments").withGroup("billing"),
        newest.withExceptionClass("java.net.ConnectException"),
        newest.withType("order.refunded"),
        newest.withGroup("analytics"),
        newest.withMessageId("m-00042"),
        newest,
        newest.withSource("payments").withNewestFirst(false),
        newest.withExceptionClass("java.io.IOException").withNewestFirst(false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  @DisplayName("a page of 50 filtered by source, source and group, exception class, type, group"
      + " or message id, newest or oldest first, at the start or deep in 10 000 dead letters,"
      + " reads at most the page and a few rows, and is the model's page")
  void filteredPageReadsOnePage(Fixture f) throws SQLException {
    for (DeadLetterQuery first : singleIndexQueries()) {
      long matching = f.model().count(first);
      List<DeadLetterQuery> pages = new ArrayList<>(List.of(first));
      if (matching > 3L * PAGE) {
        pages.add(first.withAfter(deep(f, first, (int) (matching * 4 / 5))));
      }
      for (DeadLetterQuery q : pages) {
        String plan = explain(f, q);
        long read = rowsRead(f.db().dialect(), plan);
        assertThat(read).as("rows read for %s of %d matching; plan: %s", q, matching, plan)
            .isLessThanOrEqualTo(q.limit() + SLACK);
        assertThat(f.store().list(q)).as("%s", q).containsExactlyElementsOf(f.model().list(q));
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  @DisplayName("two filters on different indexes read the first filter's rows until the page"
      + " fills (about the page divided by the share passing the second), never the table; a"
      + " reason filter reads until the page fills")
  void combinedFiltersReadAboutThePageOverTheirShare(Fixture f) throws SQLException {
    DeadLetterQuery q = DeadLetterQuery.all().withPage(0, PAGE).withNewestFirst(true)
        .withExceptionClass("java.io.IOException").withType("order.paid");
    q = q.withAfter(deep(f, q, 200));
    String plan = explain(f, q);
    // One in three rows of the exception class is of that type.
    assertThat(rowsRead(f.db().dialect(), plan)).as("plan: %s", plan)
        .isLessThanOrEqualTo(3L * PAGE + 3L * SLACK);
    assertThat(f.store().list(q)).containsExactlyElementsOf(f.model().list(q));

    DeadLetterQuery reason = DeadLetterQuery.all().withPage(0, PAGE).withSource("orders")
        .withReasonContains("ConnectException");
    plan = explain(f, reason);
    // One in five rows of the source has that reason: the page reads about five pages.
    assertThat(rowsRead(f.db().dialect(), plan)).as("plan: %s", plan)
        .isLessThanOrEqualTo(5L * PAGE + 5L * SLACK);
    assertThat(f.store().list(reason)).containsExactlyElementsOf(f.model().list(reason));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  @DisplayName("keyset pages of 50 over every dead letter of a source and group walk them all"
      + " once in both orders, while dead letters are added ahead and behind and removed between"
      + " pages; the walk ends with the model's")
  void keysetWalkUnderChanges(Fixture f) {
    for (boolean newest : new boolean[] {true, false}) {
      DeadLetterQuery q = DeadLetterQuery.all().withPage(0, PAGE).withNewestFirst(newest)
          .withSource("audit").withGroup("fulfilment");
      List<DeadLetter> walked = new ArrayList<>();
      Set<String> seen = new HashSet<>();
      Set<String> removed = new HashSet<>();
      Map<String, DeadLetter> added = new LinkedHashMap<>();
      DeadLetterQuery page = q;
      int round = 0;
      while (true) {
        List<DeadLetter> got = f.store().list(page);
        assertThat(got).as("page %d", round).containsExactlyElementsOf(f.model().list(page));
        for (DeadLetter d : got) {
          assertThat(seen.add(d.id())).as("%s listed twice", d.id()).isTrue();
        }
        walked.addAll(got);
        if (got.size() < PAGE) {
          break;
        }
        DeadLetter last = got.get(got.size() - 1);
        // Ahead of the position: one added, one removed. Behind it: one added.
        List<DeadLetter> ahead = f.model().list(page.withAfter(
            DeadLetterQuery.Position.of(last)).withPage(0, 20));
        if (!ahead.isEmpty()) {
          DeadLetter gone = ahead.get(ahead.size() - 1);
          assertThat(f.store().remove(gone.id())).contains(gone);
          f.model().remove(gone.id());
          removed.add(gone.id());
        }
        long step = newest ? -7 : 7;
        for (long s : new long[] {step, -step}) {
          Message m = Message.builder()
              .id((s == step ? "ahead-" : "behind-") + newest + "-" + round)
              .type("order.paid").payload("{}").createdAt(T0).build();
          Instant at = last.lastFailureAt().plusSeconds(s);
          DeadLetter d = new DeadLetter(m, "audit", "fulfilment", "added while paging",
              null, null, 1, at, at);
          f.store().add(d);
          f.model().add(d);
          added.put(d.id(), d);
        }
        page = page.withAfter(DeadLetterQuery.Position.of(last));
        assertThat(++round).isLessThan(1_000);
      }
      for (String id : removed) {
        assertThat(seen).as("removed ahead of the position").doesNotContain(id);
      }
      for (DeadLetter d : added.values()) {
        assertThat(seen.contains(d.id())).as("added %s", d.id())
            .isEqualTo(d.messageId().startsWith("ahead-") && !removed.contains(d.id()));
      }
      assertThat(walked).hasSizeGreaterThan(200);
      // Put the fixture back as it was for the other cases.
      for (DeadLetter d : added.values()) {
        f.store().remove(d.id());
        f.model().remove(d.id());
      }
      for (String id : removed) {
        if (added.containsKey(id)) {
          continue;
        }
        int i = indexOf(id);
        DeadLetter d = deadLetter(i);
        f.store().add(d);
        f.model().add(d);
      }
    }
  }

  private static int indexOf(String id) {
    String messageId = id.substring(0, id.indexOf('@'));
    for (int i = 0; i < DEAD_LETTERS; i++) {
      if (deadLetter(i).messageId().equals(messageId)) {
        return i;
      }
    }
    throw new AssertionError("no fixture dead letter " + id);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  @DisplayName("counts per source and group are the model's: 28 rows, one GROUP BY read")
  void countBySource(Fixture f) {
    assertThat(f.store().countBySource(100)).hasSize(28)
        .containsExactlyElementsOf(f.model().countBySource(100));
    assertThat(f.store().countBySource(7)).containsExactlyElementsOf(f.model().countBySource(7));
  }
}

package io.relaykit.bench;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.storage.jdbc.JdbcDeadLetterStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One page of {@value #PAGE} dead letters filtered by exception class, newest first, {@value
 * #DEPTH} matches deep, out of {@value #DEAD_LETTERS} dead letters in an H2 file database (one in
 * five of them has that exception class): by keyset position ({@code paging=KEYSET}, what an
 * operator console pages with) or by offset ({@code paging=OFFSET}, the baseline, the same page).
 * The keyset page reads about one page of rows from the exception-class index however deep it
 * lies; the offset page reads the skipped rows too.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DeadLetterPageBenchmark {

  static final int DEAD_LETTERS = 10_000;
  static final int PAGE = 50;
  static final int DEPTH = 1_900;
  static final String EXCEPTION = "java.net.ConnectException";
  private static final String[] EXCEPTIONS = {"java.io.IOException",
      "java.util.concurrent.TimeoutException", "java.lang.IllegalStateException", EXCEPTION,
      null};
  private static final Instant T0 = Instant.parse("2026-03-01T12:00:00Z");

  /** How the page is found. */
  public enum Paging { KEYSET, OFFSET }

  @Param({"KEYSET", "OFFSET"})
  Paging paging;

  private Path dir;
  private JdbcStorage storage;
  private JdbcDeadLetterStore store;
  private DeadLetterQuery query;
  private String expectedFirst;

  @Setup(Level.Trial)
  public void fill() throws IOException {
    dir = BenchDirs.create("h2-dead-letter-page");
    storage = JdbcStorage.open(JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:file:" + dir.toAbsolutePath().resolve("db"))
        .tablePrefix("bench_" + UUID.randomUUID().toString().substring(0, 8) + "_")
        .build(), InstantSource.system());
    store = storage.deadLetterStore();
    for (int i = 0; i < DEAD_LETTERS; i++) {
      Message m = Message.builder().id(String.format("m-%05d", i)).type("order.paid")
          .payload("{\"n\":" + i + "}").createdAt(T0).build();
      Instant at = T0.plusSeconds(i / 2);
      String exception = EXCEPTIONS[i % 5];
      store.add(new DeadLetter(m, "orders-" + (i % 7), null, "attempts exhausted (5 of 5)",
          exception, exception == null ? null : "failed", 5, at, at));
    }
    DeadLetterQuery filtered = DeadLetterQuery.all().withExceptionClass(EXCEPTION)
        .withNewestFirst(true);
    // The page starts after the dead letter DEPTH - 1 matches in: found once, as a console's
    // previous page would have.
    List<DeadLetter> before = store.list(filtered.withPage(DEPTH - 1, 1));
    List<DeadLetter> page = store.list(filtered.withPage(DEPTH, PAGE));
    expectedFirst = page.get(0).id();
    query = paging == Paging.KEYSET
        ? filtered.withPage(0, PAGE).withAfter(DeadLetterQuery.Position.of(before.get(0)))
        : filtered.withPage(DEPTH, PAGE);
  }

  @TearDown(Level.Trial)
  public void close() {
    storage.close();
    BenchDirs.delete(dir);
  }

  /** Reads the page; checks it is the expected one. */
  @Benchmark
  public int page() {
    List<DeadLetter> got = store.list(query);
    if (got.size() != PAGE || !got.get(0).id().equals(expectedFirst)) {
      throw new IllegalStateException("read " + got.size() + " dead letters starting at "
          + (got.isEmpty() ? "none" : got.get(0).id()) + ", expected " + PAGE + " from "
          + expectedFirst);
    }
    return got.size();
  }
}

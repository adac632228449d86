package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleListener;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal.Change;
import io.relaykit.queue.QueuedEvent;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * JdbcQueueJournal writes its buffer in transactions of at most 10 000 statements: an atomic list
 * that straddles that bound must still be in one transaction. The database goes away right after
 * the first transaction of a flush, the process dies, and the reopened journal holds the whole
 * list or none of it.
 */
@DisplayName("JdbcQueueJournal's bounded transactions never split an atomic list")
class JdbcQueueJournalTransactionBoundTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  @TempDir
  Path tempDir;

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "bound", "{}", Priority.NORMAL, T0, 0, T0, null);
  }

  /** A data source that hands out {@code allowed} more connections once armed, then fails. */
  private static DataSource goesAway(DataSource real, AtomicInteger allowed) {
    InvocationHandler h = (proxy, method, args) -> {
      if (method.getName().equals("getConnection") && allowed.getAndDecrement() <= 0) {
        throw new SQLException("the database went away (test)");
      }
      try {
        return method.invoke(real, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, h);
  }

  @Test
  @DisplayName("an atomic list across the 10 000-statement bound, the database gone after the first transaction, a crash: the list is all there or not at all")
  void atomicListAcrossTheBound() throws Exception {
    TestDatabase db = TestDatabase.open(TestDatabase.Kind.H2_FILE, tempDir);
    try {
      String prefix = "a5b" + Long.toHexString(System.nanoTime() & 0xffffff) + "_";
      JdbcStorage real = db.storage(prefix, Duration.ofDays(7), InstantSource.system());
      AtomicInteger allowed = new AtomicInteger(Integer.MAX_VALUE);
      JdbcStorage flaky = JdbcStorage.open(goesAway(real.dataSource(), allowed), real.dialect(),
          prefix, Duration.ofDays(7), InstantSource.system(), LifecycleListener.noop());
      String name = "bound-journal";
      JdbcQueueJournal j = flaky.queueJournal(name, Duration.ofHours(1));
      j.load();
      allowed.set(0); // down while the buffer fills: no early commit takes part of it
      // 4 990 single changes (one or two statements each), then an atomic list of 5 100 appends:
      // the 10 000th statement falls inside the list either way.
      for (int i = 0; i < 4_990; i++) {
        j.appendDeferringSync(event("fill-" + i));
      }
      List<Change> atomic = new ArrayList<>();
      for (int i = 0; i < 5_100; i++) {
        atomic.add(new Change.Append(event("atom-" + i)));
      }
      j.recordAtomically(atomic);
      for (int i = 0; i < 3_000; i++) {
        j.appendDeferringSync(event("tail-" + i)); // a second transaction's worth after the list
      }
      // Back for one transaction (the first of the flush), then gone again.
      allowed.set(1); // the first transaction commits; then the database is gone
      assertThatThrownBy(j::flush).isInstanceOf(JournalException.class);
      j.crash();

      JdbcQueueJournal reopened = real.queueJournal(name, Duration.ofHours(1));
      Set<String> ids = reopened.load().pending().stream().map(QueuedEvent::eventId)
          .collect(Collectors.toSet());
      long atoms = ids.stream().filter(id -> id.startsWith("atom-")).count();
      assertThat(ids).as("the first transaction committed").isNotEmpty();
      assertThat(atoms).as("events of the atomic list after the crash").isIn(0L, 5_100L);
      assertThat(ids.stream().filter(id -> id.startsWith("tail-")).count())
          .as("the tail's transaction never committed").isZero();
      reopened.close();
      flaky.close();
      real.close();
    } finally {
      db.close();
    }
  }
}

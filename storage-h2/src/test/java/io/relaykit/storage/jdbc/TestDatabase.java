package io.relaykit.storage.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * One real database for a test class: H2 in memory, H2 in a file, or a fresh schema on the local
 * PostgreSQL (dropped on close). Each {@link #storage} call gets its own table prefix, so tests in
 * one class never see each other's rows.
 */
final class TestDatabase {

  enum Kind { H2_MEMORY, H2_FILE, POSTGRESQL }

  static final String POSTGRES_DEFAULT_URL =
      "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  private static final AtomicInteger PREFIXES = new AtomicInteger();

  final Kind kind;
  final String url;
  final HikariDataSource pool;
  private final String pgSchema;

  private TestDatabase(Kind kind, String url, HikariDataSource pool, String pgSchema) {
    this.kind = kind;
    this.url = url;
    this.pool = pool;
    this.pgSchema = pgSchema;
  }

  private static final java.util.Map<Kind, TestDatabase> SHARED =
      new java.util.EnumMap<>(Kind.class);

  /**
   * One database of {@code kind} for the whole test JVM, closed (and its PostgreSQL schema
   * dropped, its H2 files deleted) when the JVM exits. Tests isolate through fresh table prefixes.
   */
  static synchronized TestDatabase shared(Kind kind) {
    return SHARED.computeIfAbsent(kind, k -> {
      try {
        Path dir = java.nio.file.Files.createTempDirectory("relaykit-h2-");
        TestDatabase db = open(k, dir);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          db.close();
          deleteTree(dir);
        }));
        return db;
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
  }

  static void deleteTree(Path dir) {
    try (var paths = java.nio.file.Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (java.io.IOException ignored) {
      // Best effort: a temp directory.
    }
  }

  static TestDatabase open(Kind kind, Path tempDir) {
    String id = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    switch (kind) {
      case H2_MEMORY:
        return h2(kind, "jdbc:h2:mem:rk" + id + ";DB_CLOSE_DELAY=-1;WRITE_DELAY=0;LOCK_TIMEOUT=10000");
      case H2_FILE:
        return h2(kind, "jdbc:h2:file:" + tempDir.resolve("rk" + id).toAbsolutePath()
            + ";WRITE_DELAY=0;LOCK_TIMEOUT=10000;DB_CLOSE_DELAY=-1");
      default:
        return postgres("rk_" + id);
    }
  }

  static String postgresUrl() {
    String env = System.getenv("RELAYKIT_POSTGRES_URL");
    return env == null || env.isBlank() ? POSTGRES_DEFAULT_URL : env;
  }

  /** Fails, naming PostgreSQL and how to start it, when the server is not reachable. */
  static void requirePostgres(String url) {
    try (Connection c = DriverManager.getConnection(url)) {
      c.isValid(2);
    } catch (SQLException e) {
      throw new AssertionError("PostgreSQL is not reachable at " + url + " (" + e.getMessage()
          + "). Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main"
          + " start   (or point RELAYKIT_POSTGRES_URL at a running server)", e);
    }
  }

  private static TestDatabase h2(Kind kind, String url) {
    return new TestDatabase(kind, url, pool(url, null), null);
  }

  private static TestDatabase postgres(String schema) {
    String url = postgresUrl();
    requirePostgres(url);
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    } catch (SQLException e) {
      throw new AssertionError("could not create schema " + schema + " on PostgreSQL: " + e, e);
    }
    return new TestDatabase(Kind.POSTGRESQL, url, pool(url, schema), schema);
  }

  private static HikariDataSource pool(String url, String schema) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(url);
    hc.setMaximumPoolSize(8);
    hc.setMinimumIdle(1);
    hc.setPoolName("test-" + PREFIXES.incrementAndGet());
    if (schema != null) {
      hc.setSchema(schema);
    }
    return new HikariDataSource(hc);
  }

  /**
   * A new pool on this PostgreSQL database and schema that connects through {@code hostPort}
   * (a fault proxy in front of the server) instead of the server's own address. Close it.
   */
  HikariDataSource poolVia(String hostPort, int socketTimeoutSeconds) {
    if (kind != Kind.POSTGRESQL) {
      throw new IllegalStateException("only PostgreSQL is reached over TCP here, not " + kind);
    }
    String via = url.replaceFirst("//[^/]+/", "//" + hostPort + "/");
    via += (via.contains("?") ? "&" : "?") + "socketTimeout=" + socketTimeoutSeconds
        + "&connectTimeout=" + socketTimeoutSeconds;
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(via);
    hc.setMaximumPoolSize(2);
    hc.setMinimumIdle(0);
    hc.setConnectionTimeout(Math.max(250, socketTimeoutSeconds * 1000L));
    hc.setPoolName("test-via-" + PREFIXES.incrementAndGet());
    hc.setSchema(pgSchema);
    return new HikariDataSource(hc);
  }

  Dialect dialect() {
    return kind == Kind.POSTGRESQL ? Dialect.POSTGRESQL : Dialect.H2;
  }

  DataSource dataSource() {
    return pool;
  }

  /** A fresh table prefix, unique in this JVM. */
  static String newPrefix() {
    return "t" + PREFIXES.incrementAndGet() + "_";
  }

  /**
   * Storage on {@code prefix} with every table emptied: cheaper than new tables per test (DDL is
   * the slow part on a busy machine), and just as isolated for tests that run one at a time.
   */
  JdbcStorage emptied(String prefix, Duration retention, InstantSource clock) {
    JdbcStorage storage = storage(prefix, retention, clock);
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      for (String table : new String[] {"outbox", "outbox_head", "dead_letter", "idempotency",
          "version_guard", "journal"}) {
        s.execute("TRUNCATE TABLE " + prefix + table);
      }
    } catch (SQLException e) {
      throw new AssertionError("could not empty tables with prefix " + prefix + ": " + e, e);
    }
    return storage;
  }

  /** Storage with its own fresh tables. */
  JdbcStorage storage(InstantSource clock) {
    return storage(newPrefix(), Duration.ofDays(7), clock);
  }

  /**
   * Storage on {@code prefix} whose shared decisions (leases, takeovers, retention) are made on
   * {@code clock} through {@link DatabaseClock#of}, so tests drive them with a fake clock.
   */
  JdbcStorage storage(String prefix, Duration retention, InstantSource clock) {
    return JdbcStorage.open(pool, dialect(), prefix, retention, clock, DatabaseClock.of(clock),
        io.relaykit.monitor.LifecycleListener.noop(), true);
  }

  /**
   * Storage on {@code prefix} (tables kept as they are) for a host whose application clock is
   * {@code hostClock} while shared decisions are made on {@code databaseClock}.
   */
  JdbcStorage storageOnHost(String prefix, Duration retention, InstantSource hostClock,
      DatabaseClock databaseClock) {
    return JdbcStorage.open(pool, dialect(), prefix, retention, hostClock, databaseClock,
        io.relaykit.monitor.LifecycleListener.noop(), true);
  }

  /** Storage on {@code prefix} that decides on the database server's own clock. */
  JdbcStorage storageOnDatabaseClock(String prefix, Duration retention, InstantSource clock) {
    return JdbcStorage.open(pool, dialect(), prefix, retention, clock, DatabaseClock.database(),
        io.relaykit.monitor.LifecycleListener.noop(), true);
  }

  Connection connection() throws SQLException {
    return pool.getConnection();
  }

  long count(String sql) {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new AssertionError(sql + " failed: " + e, e);
    }
  }

  /** Closes the pool and drops the PostgreSQL schema. Not AutoCloseable on purpose: JUnit would
   * close a parameterized test's argument after the first test. */
  void close() {
    pool.close();
    if (pgSchema != null) {
      try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + pgSchema + " CASCADE");
      } catch (SQLException e) {
        throw new AssertionError("could not drop schema " + pgSchema + ": " + e, e);
      }
    }
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase(Locale.ROOT);
  }
}

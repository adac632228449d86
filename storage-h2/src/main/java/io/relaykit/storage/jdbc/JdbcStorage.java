package io.relaykit.storage.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.OutboxBound;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import javax.sql.DataSource;

/**
 * relaykit's JDBC storage on one database and table prefix: creates or migrates the tables when
 * opened, then hands out the stores (outbox, dead letters, idempotency, version guard, queue
 * journals) that share its connections. Opened from an {@link JdbcStorageConfig} it owns a small
 * HikariCP pool and closes it on {@link #close()}; opened on your {@link DataSource} it leaves the
 * pool to you.
 *
 * <p>Durability on H2: {@link JdbcStorageConfig} sets {@code WRITE_DELAY=0}, so a committed
 * transaction survives the death of the process. H2 does not fsync on commit, so an OS crash or a
 * power loss can still lose the last commits; use PostgreSQL where that matters.
 */
public final class JdbcStorage implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(JdbcStorage.class.getName());

  private final DataSource dataSource;
  private final HikariDataSource ownedPool;
  private final Dialect dialect;
  private final Tables tables;
  private final Duration retention;
  private final InstantSource clock;
  private final DatabaseClock databaseClock;
  private final LifecycleListener listener;
  private volatile OutboxBound outboxBound = OutboxBound.unbounded();
  private volatile OutboxOrderScope outboxOrderScope = OutboxOrderScope.KEY;
  private volatile MetricsListener outboxMetrics = MetricsListener.noop();
  /** The wake signals every outbox store of this storage shares: one per storage (and JVM). */
  private final OutboxWakes wakes;

  private JdbcStorage(DataSource dataSource, HikariDataSource ownedPool, Dialect dialect,
      Tables tables, Duration retention, InstantSource clock, DatabaseClock databaseClock,
      LifecycleListener listener) {
    this.dataSource = dataSource;
    this.ownedPool = ownedPool;
    this.dialect = dialect;
    this.tables = tables;
    this.retention = retention;
    this.clock = clock;
    this.databaseClock = databaseClock;
    this.listener = listener;
    this.wakes = new OutboxWakes(dialect, tables.outbox, hikariConnections(dataSource));
  }

  /**
   * Opens the dedicated connection of the outbox listener (PostgreSQL's cross-process wake, see
   * {@link #outboxWakeup()}): a new physical connection per call, never one of a pool, since the
   * listener holds it for as long as it listens.
   */
  @FunctionalInterface
  public interface ListenerConnections {
    /**
     * Opens a new connection to the outbox's database. It must not block without bound: set a
     * connect and a socket (or login) timeout (with pgjdbc {@code connectTimeout} and {@code
     * socketTimeout}), since a server or link that accepts and then answers nothing holds the
     * listener's thread in this call, and closing the storage waits for that thread for at most
     * about 10 s and then leaves it behind.
     *
     * @return a new connection, closed by the listener
     * @throws SQLException if it cannot be opened (the listener retries with backoff)
     */
    Connection open() throws SQLException;
  }

  /** The default wake interval: at most one NOTIFY per this interval per storage. */
  public static final Duration DEFAULT_OUTBOX_WAKE_INTERVAL = OutboxWakes.DEFAULT_INTERVAL;

  /**
   * Connections beside a HikariCP pool (the storage's own, or one the application opened it on)
   * with the pool's URL, user, password and driver properties plus TCP keepalive and 10 s connect
   * and socket timeouts (unless the pool's properties set them); null when the
   * data source is not a HikariCP pool with a JDBC URL.
   */
  static ListenerConnections hikariConnections(DataSource dataSource) {
    HikariDataSource h;
    try {
      if (dataSource instanceof HikariDataSource direct) {
        h = direct;
      } else if (dataSource.isWrapperFor(HikariDataSource.class)) {
        h = dataSource.unwrap(HikariDataSource.class);
      } else {
        return null;
      }
    } catch (SQLException | RuntimeException e) {
      return null;
    }
    String url = h.getJdbcUrl();
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      return null;
    }
    java.util.Properties props = new java.util.Properties();
    props.putAll(h.getDataSourceProperties());
    if (h.getUsername() != null) {
      props.setProperty("user", h.getUsername());
    }
    if (h.getPassword() != null) {
      props.setProperty("password", h.getPassword());
    }
    props.setProperty("tcpKeepAlive", "true");
    // A link that accepts and answers nothing must not hold the listener's open forever: pgjdbc
    // reads the login reply without a timeout unless one is set. The listener's own waits set
    // their timeouts per call, so these bound only the open.
    props.putIfAbsent("connectTimeout", "10");
    props.putIfAbsent("socketTimeout", "10");
    props.setProperty("ApplicationName", "relaykit-outbox-listener");
    return () -> java.sql.DriverManager.getConnection(url, props);
  }

  /**
   * The signal that wakes this JVM's relays of this storage's outbox when appended rows commit
   * (see {@link io.relaykit.outbox.OutboxWakeup}); every {@link #outboxStore()} of this storage
   * returns it from {@link JdbcOutboxStore#wakeup()}, so relays built on any of them share it.
   *
   * <p>In this JVM: fired after an append on an auto-commit connection, by {@link
   * JdbcOutboxStore#committed()} after your own commit, and by the Spring starter after the
   * transaction commits. Across processes, on PostgreSQL (unless {@link
   * #outboxNotifications(boolean)} turned it off): an append sends {@code pg_notify(channel, '')}
   * inside its transaction at most once per {@link #outboxWakeInterval(Duration) wake interval}
   * per storage, delivered only if that transaction commits; the channel is the outbox table's
   * name in lower case plus {@code _wake}. While a relay of this storage is started, one listener
   * thread per storage holds one dedicated connection ({@link ListenerConnections}: by default
   * beside the HikariCP pool, with its settings) in {@code LISTEN} and wakes the relays on each
   * notification. H2 has no NOTIFY: its relays across processes poll.
   *
   * <p>Costs: in-JVM wakes touch no database. A NOTIFY is one more statement in at most one
   * append transaction per interval, and PostgreSQL serialises the commits of notifying
   * transactions (that is why they are coalesced: with the default 10 ms at most 100 per second
   * per storage). The idle listener sends
   * no statements. Guarantees and limits: wakes only shorten latency; the relays' poll stays the
   * safety net, so a lost wake (a NOTIFY whose transaction rolled back while the appends that
   * skipped theirs committed, a listener reconnecting, an append in your transaction without
   * {@link JdbcOutboxStore#committed()}) costs at most one poll interval. The listener wakes the
   * relays again one interval after each notification, for appends that skipped their NOTIFY.
   *
   * @return this storage's wakeup; the same object on every call
   */
  public io.relaykit.outbox.OutboxWakeup outboxWakeup() {
    return wakes.wakeup();
  }

  /** {@link #DEFAULT_OUTBOX_WAKE_INTERVAL} in milliseconds, for the Javadoc. */
  static final long DEFAULT_WAKE_INTERVAL_MILLIS = 10;

  /**
   * How often, at most, appends of this storage send a NOTIFY on PostgreSQL (see {@link
   * #outboxWakeup()}); for appends after the call. Default 10 ms: a shorter interval wakes
   * other processes sooner after a burst and serialises more commits.
   * {@link Duration#ZERO} notifies in every append transaction.
   *
   * @param interval the interval, {@code >= 0}
   * @return this storage
   * @throws IllegalArgumentException if {@code interval} is null or negative
   */
  public JdbcStorage outboxWakeInterval(Duration interval) {
    wakes.interval(interval);
    return this;
  }

  /**
   * Turns the cross-process wake on PostgreSQL (NOTIFY in appends, LISTEN while a relay runs) on
   * or off; on by default. Off, relays in other processes find rows by their poll. In-JVM wakes
   * are not affected. Takes effect for later appends and the next relay start.
   *
   * @param enabled whether to notify and listen
   * @return this storage
   */
  public JdbcStorage outboxNotifications(boolean enabled) {
    wakes.enabled(enabled);
    return this;
  }

  /**
   * Where the outbox listener opens its dedicated connection (see {@link #outboxWakeup()}).
   * Needed only when the storage was opened on a data source that is not a HikariCP pool with a
   * JDBC URL (otherwise the pool's settings are used); without one, there is no listener and
   * relays of other processes' rows poll. Takes effect at the next relay start.
   *
   * @param connections opens a new physical connection per call; not null
   * @return this storage
   * @throws IllegalArgumentException if {@code connections} is null
   */
  public JdbcStorage outboxListenerConnections(ListenerConnections connections) {
    if (connections == null) {
      throw new IllegalArgumentException("connections must not be null");
    }
    wakes.connections(connections);
    return this;
  }

  /** The wake signals, for tests. */
  OutboxWakes wakes() {
    return wakes;
  }

  /**
   * Opens the database {@code config} names with a pool of {@code config.poolSize()} connections,
   * and creates or migrates the tables. The outbox reports to {@code config.listener()}, if any.
   * Blocks until the pool's first connection is made and the migration (or, with {@code
   * migrate=false}, the version check) is done; the pool is closed again if either fails.
   *
   * @param config the database, pool, table prefix, retention, bound and clock settings
   * @param clock the clock the stores read where the SPI does not pass the time in
   * @return an open storage that owns its pool: {@link #close()} it
   * @throws IllegalArgumentException if {@code config} or {@code clock} is null
   * @throws SchemaVersionException if the tables were written by a newer relaykit
   * @throws JdbcStorageException if the database cannot be reached
   */
  public static JdbcStorage open(JdbcStorageConfig config, InstantSource clock) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    JdbcClientVersions.checkPool();
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(config.effectiveJdbcUrl());
    if (config.username() != null) {
      hc.setUsername(config.username());
    }
    if (config.password() != null) {
      hc.setPassword(config.password());
    }
    hc.setMaximumPoolSize(config.poolSize());
    hc.setPoolName("relaykit-" + config.tablePrefix());
    hc.setAutoCommit(true);
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    HikariDataSource pool;
    try {
      pool = openPool(hc, config);
    } catch (RuntimeException e) {
      throw new JdbcStorageException("could not open " + config.dialect() + " database at "
          + config.jdbcUrl() + ": " + e.getMessage(), e);
    }
    try {
      JdbcStorage storage = open(pool, pool, config.dialect(), config.tablePrefix(),
          config.retention(), clock, config.databaseClock(),
          config.listener().orElse(LifecycleListener.noop()), config.migrate());
      storage.outboxBound = config.outboxBound();
      storage.outboxOrderScope = config.outboxOrderScope();
      storage.outboxMetrics = config.outboxMetrics();
      storage.outboxNotifications(config.outboxNotifications());
      storage.outboxWakeInterval(config.outboxWakeInterval());
      return storage;
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
  }

  /**
   * The pool on {@link JdbcStorageConfig#effectiveJdbcUrl()}; if H2 answers that the file database
   * is already in use (90020) and the URL only differs from the one the application gave by the
   * {@code retry:} file system, the application holds the database open in this JVM under its own
   * URL (H2 keeps one database per URL name): the pool then uses that URL, so both reach the same
   * database, and a warning says that an interrupted writer can close it.
   */
  private static HikariDataSource openPool(HikariConfig hc, JdbcStorageConfig config) {
    try {
      return new HikariDataSource(hc);
    } catch (RuntimeException e) {
      String plain = config.effectiveJdbcUrl(false);
      if (plain.equals(hc.getJdbcUrl()) || !inUse(e)) {
        throw e;
      }
      System.getLogger(JdbcStorage.class.getName()).log(System.Logger.Level.WARNING,
          "H2 database " + config.jdbcUrl() + " is already open in this JVM under the URL as"
          + " given; relaykit uses that URL too. An interrupted writer can then close the database"
          + " for every connection: give your own connections the URL " + hc.getJdbcUrl()
          + " (H2's retry: file system) to prevent it");
      hc.setJdbcUrl(plain);
      return new HikariDataSource(hc);
    }
  }

  private static boolean inUse(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getErrorCode() == 90020) {
        return true;
      }
    }
    return false;
  }

  /**
   * Uses {@code dataSource} (your pool; not closed by {@link #close()}) and creates or migrates
   * the tables with {@code tablePrefix}. On H2, give the URL {@code ;WRITE_DELAY=0} yourself (or
   * use {@link JdbcStorageConfig}): without it H2 may lose the last half second of commits when the
   * process dies.
   *
   * @param dataSource the connections to use; the storage never closes it
   * @param dialect the database's dialect; must match what the data source connects to
   * @param tablePrefix the prefix of every table and index
   * @param retention how long sent outbox rows and completed idempotency keys are kept
   * @param clock the clock the stores read where the SPI does not pass the time in
   * @return an open storage on {@code dataSource}
   * @throws IllegalArgumentException naming the argument: a null one, a dialect that does not
   *     match the database, an invalid table prefix, a non-positive retention
   * @throws SchemaVersionException if the tables were written by a newer relaykit
   * @throws JdbcStorageException if the database cannot be reached or a migration script fails
   */
  public static JdbcStorage open(DataSource dataSource, Dialect dialect, String tablePrefix,
      Duration retention, InstantSource clock) {
    return open(dataSource, dialect, tablePrefix, retention, clock, LifecycleListener.noop());
  }

  /**
   * As {@link #open(DataSource, Dialect, String, Duration, InstantSource)}, with the outbox
   * reporting its steps to {@code listener} (see {@link JdbcOutboxStore}).
   *
   * @param dataSource the connections to use; the storage never closes it
   * @param dialect the database's dialect; must match what the data source connects to
   * @param tablePrefix the prefix of every table and index
   * @param retention how long sent outbox rows and completed idempotency keys are kept
   * @param clock the clock the stores read where the SPI does not pass the time in
   * @param listener where the outbox reports its steps; {@link LifecycleListener#noop()} for
   *     nowhere
   * @return an open storage on {@code dataSource}
   * @throws IllegalArgumentException as {@link #open(DataSource, Dialect, String, Duration,
   *     InstantSource)}, or if {@code listener} is null
   * @throws SchemaVersionException if the tables were written by a newer relaykit
   * @throws JdbcStorageException if the database cannot be reached or a migration script fails
   */
  public static JdbcStorage open(DataSource dataSource, Dialect dialect, String tablePrefix,
      Duration retention, InstantSource clock, LifecycleListener listener) {
    if (dataSource == null) {
      throw new IllegalArgumentException("dataSource must not be null");
    }
    return open(dataSource, null, dialect, tablePrefix, retention, clock,
        DatabaseClock.database(), listener, true);
  }

  /**
   * As {@link #open(DataSource, Dialect, String, Duration, InstantSource, LifecycleListener)},
   * with leases, takeovers and retention decided on {@code databaseClock} ({@link
   * DatabaseClock#of} for tests that drive time; the others use {@link DatabaseClock#database()}),
   * and with {@code migrate} false running no DDL (see {@link #openVerified}).
   *
   * @param dataSource the connections to use; the storage never closes it
   * @param dialect the database's dialect; must match what the data source connects to
   * @param tablePrefix the prefix of every table and index
   * @param retention how long sent outbox rows and completed idempotency keys are kept
   * @param clock the clock the stores read where the SPI does not pass the time in
   * @param databaseClock the clock leases, takeovers and retention are decided on
   * @param listener where the outbox reports its steps; {@link LifecycleListener#noop()} for
   *     nowhere
   * @param migrate true to create or migrate the tables, false to only check their version
   * @return an open storage on {@code dataSource}
   * @throws IllegalArgumentException as {@link #open(DataSource, Dialect, String, Duration,
   *     InstantSource, LifecycleListener)}, or if {@code databaseClock} is null
   * @throws SchemaVersionException if the tables are newer than this build knows, or (with
   *     {@code migrate} false) older or absent
   * @throws JdbcStorageException if the database cannot be reached or a migration script fails
   */
  public static JdbcStorage open(DataSource dataSource, Dialect dialect, String tablePrefix,
      Duration retention, InstantSource clock, DatabaseClock databaseClock,
      LifecycleListener listener, boolean migrate) {
    if (dataSource == null) {
      throw new IllegalArgumentException("dataSource must not be null");
    }
    return open(dataSource, null, dialect, tablePrefix, retention, clock, databaseClock,
        listener, migrate);
  }

  /**
   * Like {@link #open(DataSource, Dialect, String, Duration, InstantSource)}, but runs no DDL: the
   * tables must already be at this build's schema version (migrated by {@link #migrate} or by
   * Flyway/Liquibase running relaykit's scripts). For applications whose database user may only
   * read and write rows.
   *
   * @param dataSource the connections to use; the storage never closes it
   * @param dialect the database's dialect; must match what the data source connects to
   * @param tablePrefix the prefix of every table and index
   * @param retention how long sent outbox rows and completed idempotency keys are kept
   * @param clock the clock the stores read where the SPI does not pass the time in
   * @return an open storage on {@code dataSource}
   * @throws IllegalArgumentException as {@link #open(DataSource, Dialect, String, Duration,
   *     InstantSource)}
   * @throws JdbcStorageException if the database cannot be reached
   * @throws SchemaVersionException naming the missing scripts if the tables are older (or absent),
   *     or if they are newer than this build knows
   */
  public static JdbcStorage openVerified(DataSource dataSource, Dialect dialect,
      String tablePrefix, Duration retention, InstantSource clock) {
    if (dataSource == null) {
      throw new IllegalArgumentException("dataSource must not be null");
    }
    return open(dataSource, null, dialect, tablePrefix, retention, clock,
        DatabaseClock.database(), LifecycleListener.noop(), false);
  }

  /**
   * Brings the relaykit tables with {@code tablePrefix} up to this build's schema version, as
   * opening a storage does by default: for a deployment step that runs with DDL rights while the
   * application opens with {@code migrate=false}. The same SQL ships as versioned scripts per
   * dialect on the class path ({@code io/relaykit/storage/jdbc/db/h2/V1__base.sql}, ...,
   * {@code .../db/postgresql/...}) with the placeholder {@code ${prefix}}, for Flyway or
   * Liquibase; each script records its version in {@code <prefix>schema_version}.
   *
   * <p>Safe to run from several instances at once: PostgreSQL migrates under an advisory lock in
   * one transaction; H2 serialises DDL and its scripts are idempotent.
   *
   * @param dataSource connections of a user allowed to run DDL; not closed
   * @param dialect the database's dialect; must match what the data source connects to
   * @param tablePrefix the prefix of the tables to migrate
   * @throws IllegalArgumentException if {@code dataSource} or {@code dialect} is null, the
   *     dialect does not match the database, or the prefix is invalid
   * @throws SchemaVersionException if the tables are at a newer version than this build knows
   * @throws JdbcStorageException if the database cannot be reached or a script fails
   */
  public static void migrate(DataSource dataSource, Dialect dialect, String tablePrefix) {
    if (dataSource == null || dialect == null) {
      throw new IllegalArgumentException("dataSource and dialect must not be null");
    }
    Tables tables = new Tables(tablePrefix);
    checkDialect(dataSource, dialect);
    Schema.migrate(dataSource, dialect, tables, true);
  }

  private static JdbcStorage open(DataSource dataSource, HikariDataSource owned, Dialect dialect,
      String tablePrefix, Duration retention, InstantSource clock, DatabaseClock databaseClock,
      LifecycleListener listener, boolean migrate) {
    if (dialect == null) {
      throw new IllegalArgumentException("dialect must not be null");
    }
    JdbcClientVersions.checkDriver(dialect);
    if (retention == null || retention.isZero() || retention.isNegative()) {
      throw new IllegalArgumentException("retention must be a positive duration, was "
          + retention);
    }
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    if (listener == null) {
      throw new IllegalArgumentException("listener must not be null: use LifecycleListener.noop()");
    }
    if (databaseClock == null) {
      throw new IllegalArgumentException(
          "databaseClock must not be null: use DatabaseClock.database()");
    }
    Tables tables = new Tables(tablePrefix);
    checkDialect(dataSource, dialect);
    Schema.migrate(dataSource, dialect, tables, migrate);
    return new JdbcStorage(dataSource, owned, dialect, tables, retention, clock, databaseClock,
        listener);
  }

  private static void checkDialect(DataSource dataSource, Dialect dialect) {
    try (Connection c = dataSource.getConnection()) {
      Dialect actual = Dialect.of(c);
      if (actual != dialect) {
        throw new IllegalArgumentException("dialect " + dialect + " does not match the database,"
            + " which is " + actual);
      }
      if (dialect == Dialect.H2) {
        warnUnlessWriteDelayZero(c);
      }
    } catch (SQLException e) {
      throw new JdbcStorageException("could not connect to the " + dialect + " database: "
          + e.getMessage(), e);
    }
  }

  private static void warnUnlessWriteDelayZero(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS"
            + " WHERE SETTING_NAME = 'WRITE_DELAY'")) {
      if (rs.next() && !"0".equals(rs.getString(1))) {
        LOG.log(System.Logger.Level.WARNING, "H2 WRITE_DELAY is " + rs.getString(1)
            + " ms: commits of that last interval are lost if the process dies; add"
            + " ;WRITE_DELAY=0 to the JDBC URL");
      }
    }
  }

  /**
   * The outbox: append in your transaction, claim and mark from relays; reports ENQUEUED (and
   * DEAD_LETTERED for undecodable rows) to this storage's listener. Readiness, lease takeover and
   * sent-row retention are decided on {@link #databaseClock()}. Appends are checked against the
   * config's {@link JdbcStorageConfig#outboxBound()} and ordered by its {@link
   * JdbcStorageConfig#outboxOrderScope()} (unbounded and {@link OutboxOrderScope#KEY} for storage
   * opened without a config).
   *
   * @return a new outbox store on this storage's connections; cheap (no database access)
   */
  public JdbcOutboxStore outboxStore() {
    return outboxStore(outboxBound, outboxOrderScope);
  }

  /**
   * {@link #outboxStore()} whose appends are checked against {@code bound} (see {@link
   * JdbcOutboxStore#append}).
   *
   * @param bound the most unsent rows, and what an append over it does
   * @return a new outbox store on this storage's connections
   * @throws IllegalArgumentException if {@code bound} is null
   */
  public JdbcOutboxStore outboxStore(OutboxBound bound) {
    return outboxStore(bound, outboxOrderScope);
  }

  /**
   * As {@link #outboxStore()}, with rows appended through it ordered by {@code scope} (a key
   * across all destinations, or a key per destination). Stores of both scopes may share the
   * tables: each row keeps the scope it was appended with.
   *
   * @param scope what per-key order spans for rows appended through the store
   * @return a new outbox store on this storage's connections
   * @throws IllegalArgumentException if {@code scope} is null
   */
  public JdbcOutboxStore outboxStore(OutboxOrderScope scope) {
    return outboxStore(outboxBound, scope);
  }

  /**
   * The outbox with appends checked against {@code bound} and ordered by {@code scope}.
   *
   * @param bound the most unsent rows, and what an append over it does
   * @param scope what per-key order spans for rows appended through the store
   * @return a new outbox store on this storage's connections
   * @throws IllegalArgumentException if {@code bound} or {@code scope} is null
   */
  public JdbcOutboxStore outboxStore(OutboxBound bound, OutboxOrderScope scope) {
    if (bound == null) {
      throw new IllegalArgumentException("bound must not be null: use OutboxBound.unbounded()");
    }
    if (scope == null) {
      throw new IllegalArgumentException("scope must not be null");
    }
    return outboxStore(bound, scope, outboxMetrics);
  }

  /**
   * The outbox with appends checked against {@code bound}, ordered by {@code scope}, and each
   * claim's walk reported to {@code metrics} ({@link MetricsListener#outboxClaimWalked}) instead
   * of the config's {@link JdbcStorageConfig#outboxMetrics()}: for storage opened on your own
   * DataSource, which has no config. A listener that throws is contained: the claim is not
   * affected. Cost: none (no database access).
   *
   * @param bound the most unsent rows, and what an append over it does
   * @param scope what per-key order spans for rows appended through the store
   * @param metrics where each claim reports the key heads and rows it examined; {@link
   *     MetricsListener#noop()} for nowhere
   * @return a new outbox store on this storage's connections
   * @throws IllegalArgumentException if an argument is null
   */
  public JdbcOutboxStore outboxStore(OutboxBound bound, OutboxOrderScope scope,
      MetricsListener metrics) {
    if (bound == null) {
      throw new IllegalArgumentException("bound must not be null: use OutboxBound.unbounded()");
    }
    if (scope == null) {
      throw new IllegalArgumentException("scope must not be null");
    }
    if (metrics == null) {
      throw new IllegalArgumentException("metrics must not be null: use MetricsListener.noop()");
    }
    return new JdbcOutboxStore(dataSource, dialect, tables, clock, databaseClock, listener,
        bound, scope, metrics, wakes);
  }

  /**
   * Dead letters, with {@link JdbcDeadLetterStore#replayToOutbox} into {@link #outboxStore()}.
   *
   * @return a new dead-letter store on this storage's connections; cheap (no database access)
   */
  public JdbcDeadLetterStore deadLetterStore() {
    return new JdbcDeadLetterStore(dataSource, dialect, tables, databaseClock);
  }

  /**
   * Idempotency keys whose leases, takeovers and retention are decided on {@link
   * #databaseClock()}, DONE for the retention period, then deleted by the
   * store's own claims (see {@link JdbcIdempotencyStore}: one bounded purge per interval).
   *
   * @return a new idempotency store on this storage's connections; cheap (no database access)
   */
  public JdbcIdempotencyStore idempotencyStore() {
    return new JdbcIdempotencyStore(dataSource, dialect, tables, clock, databaseClock, retention);
  }

  /**
   * Entity versions that only grow.
   *
   * @return a new version guard on this storage's connections; cheap (no database access)
   */
  public JdbcVersionGuard versionGuard() {
    return new JdbcVersionGuard(dataSource, dialect, tables);
  }

  /**
   * The queue journal called {@code name} (many share one table), group-committing non-critical
   * changes every 50 ms.
   *
   * @param name the journal's name, 1..255 characters
   * @return a new journal; close it to flush and stop its committer
   * @throws IllegalArgumentException if {@code name} is blank or longer than 255 characters
   */
  public JdbcQueueJournal queueJournal(String name) {
    return queueJournal(name, Duration.ofMillis(50));
  }

  /**
   * The queue journal called {@code name}, group-committing every {@code commitInterval}, with at
   * most 100 000 uncommitted statements and 64 MiB of uncommitted payload buffered while the
   * database is down.
   *
   * @param name the journal's name, 1..255 characters
   * @param commitInterval how often buffered changes are committed
   * @return a new journal; close it to flush and stop its committer
   * @throws IllegalArgumentException naming the field for a blank or over-long name or a
   *     non-positive interval
   */
  public JdbcQueueJournal queueJournal(String name, Duration commitInterval) {
    return new JdbcQueueJournal(dataSource, dialect, tables, name, commitInterval);
  }

  /**
   * The queue journal called {@code name}, group-committing every {@code commitInterval}, with at
   * most {@code maxBufferedStatements} uncommitted statements and {@code maxBufferedBytes} of
   * uncommitted payload buffered (while the database is down or behind) before appends are
   * refused with {@link io.relaykit.queue.JournalFullException}.
   *
   * @param name the journal's name, 1..255 characters
   * @param commitInterval how often buffered changes are committed
   * @param maxBufferedStatements the most uncommitted statements held, at least 1
   * @param maxBufferedBytes the most uncommitted payload bytes held, at least 1
   * @return a new journal; close it to flush and stop its committer
   *
   * @throws IllegalArgumentException naming the field for a blank or over-long name, a
   *     non-positive interval or bound
   */
  public JdbcQueueJournal queueJournal(String name, Duration commitInterval,
      int maxBufferedStatements, long maxBufferedBytes) {
    return new JdbcQueueJournal(dataSource, dialect, tables, name, commitInterval,
        maxBufferedStatements, maxBufferedBytes);
  }

  /**
   * The database's dialect.
   *
   * @return the dialect the storage was opened with, checked against the database
   */
  public Dialect dialect() {
    return dialect;
  }

  /**
   * The prefix of every table and index of this storage.
   *
   * @return the validated prefix
   */
  public String tablePrefix() {
    return tables.prefix;
  }

  /**
   * How long sent outbox rows and completed idempotency keys are kept.
   *
   * @return a positive duration
   */
  public Duration retention() {
    return retention;
  }

  /**
   * The clock the stores read where the SPI does not pass the time in.
   *
   * @return the clock given when opening
   */
  public InstantSource clock() {
    return clock;
  }

  /**
   * The clock leases, takeovers and retention are decided on: the database's ({@link
   * DatabaseClock#database()}) unless the storage was opened with another.
   *
   * @return the database clock
   */
  public DatabaseClock databaseClock() {
    return databaseClock;
  }

  /**
   * Where the outbox reports its steps.
   *
   * @return the listener; {@link LifecycleListener#noop()} when nowhere
   */
  public LifecycleListener listener() {
    return listener;
  }

  /**
   * The connections the stores use; for your own transactions around {@code append}.
   *
   * @return the storage's own pool, or the data source it was opened on
   */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * Stops the outbox listener (waiting up to about 10 s for a LISTEN in progress), then closes the
   * pool if this storage opened it; stores handed out must not be used after.
   */
  @Override
  public void close() {
    wakes.close();
    if (ownedPool != null) {
      ownedPool.close();
    }
  }
}

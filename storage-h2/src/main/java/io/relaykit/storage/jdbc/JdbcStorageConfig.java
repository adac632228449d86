package io.relaykit.storage.jdbc;

import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.RelaySettings;
import io.relaykit.config.Settings;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.OutboxBound;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Where and how relaykit's JDBC storage keeps its tables. Immutable; {@link Builder#build()}
 * validates every field and names the one that is wrong. A {@code jdbc:postgresql:} URL selects the
 * PostgreSQL dialect, a {@code jdbc:h2:} URL the H2 one.
 *
 * <p>For an H2 URL that does not set them, {@link #effectiveJdbcUrl()} adds {@code WRITE_DELAY=0}
 * (commits reach the file before the commit returns, so a killed process loses none), {@code
 * LOCK_TIMEOUT=10000} (H2's default of 1 s fails relays' row updates under contention) and, for
 * in-memory databases, {@code DB_CLOSE_DELAY=-1} (the database lives as long as the JVM, not as
 * long as one connection). A file URL without a file-system prefix gets H2's {@code retry:} file
 * system ({@code jdbc:h2:file:/data/db} becomes {@code jdbc:h2:retry:/data/db}): without it, one
 * application thread interrupted during a write (a cancelled future, {@code shutdownNow}, a
 * request timeout) closes the database for every store until the process restarts. Give your own
 * {@code DataSource} the same prefix when you open {@link JdbcStorage} on it.
 *
 * <table>
 *   <caption>Fields and defaults</caption>
 *   <tr><th>field</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>jdbcUrl</td><td>required</td><td>H2 or PostgreSQL JDBC URL</td></tr>
 *   <tr><td>username, password</td><td>none</td><td>credentials, if the URL has none</td></tr>
 *   <tr><td>poolSize</td><td>4</td><td>connections in the HikariCP pool, 1..200</td></tr>
 *   <tr><td>tablePrefix</td><td>{@code relaykit_}</td><td>prefix of every table and index</td></tr>
 *   <tr><td>lease</td><td>30 s</td><td>how long a relay holds claimed outbox rows</td></tr>
 *   <tr><td>retention</td><td>7 days</td><td>how long sent rows and done keys are kept</td></tr>
 *   <tr><td>outboxBound</td><td>{@link OutboxBound#unbounded()}</td><td>the most unsent outbox
 *       rows, and whether an append over it is refused or accepted (see {@link
 *       JdbcOutboxStore#append})</td></tr>
 *   <tr><td>outboxOrderScope</td><td>{@link OutboxOrderScope#KEY}</td><td>what per-key order
 *       spans: a key across all destinations, or a key per destination</td></tr>
 *   <tr><td>outboxNotifications</td><td>true</td><td>PostgreSQL: appends NOTIFY and a listener
 *       wakes relays of other processes (see {@link JdbcStorage#outboxWakeup()})</td></tr>
 *   <tr><td>outboxWakeInterval</td><td>10 ms</td><td>at most one NOTIFY per interval per
 *       storage</td></tr>
 *   <tr><td>databaseClock</td><td>{@link DatabaseClock#database()}</td><td>the clock leases,
 *       takeovers and retention are decided on</td></tr>
 *   <tr><td>migrate</td><td>true</td><td>create or migrate the tables when opening; false only
 *       checks that they are at this build's schema version (for DML-only credentials, or where
 *       Flyway or Liquibase runs relaykit's scripts; see {@link JdbcStorage#migrate})</td></tr>
 *   <tr><td>listener</td><td>none</td><td>sees outbox steps: ENQUEUED on append, DEAD_LETTERED
 *       for an undecodable row; under Guice, {@link JdbcStorageModule} adds the injector's
 *       {@link LifecycleListener}</td></tr>
 *   <tr><td>outboxMetrics</td><td>{@link MetricsListener#noop()}</td><td>sees what each outbox
 *       claim walked: key heads examined and rows read (H2)</td></tr>
 * </table>
 */
public final class JdbcStorageConfig {
  /** Connections in the pool when {@link Builder#poolSize} is not set: {@value}. */
  public static final int DEFAULT_POOL_SIZE = 4;
  /** Prefix of every table and index when {@link Builder#tablePrefix} is not set: {@value}. */
  public static final String DEFAULT_TABLE_PREFIX = "relaykit_";
  /** How long a relay holds claimed outbox rows when {@link Builder#lease} is not set: 30 s. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
  /**
   * How long sent outbox rows and completed idempotency keys are kept when {@link
   * Builder#retention} is not set: 7 days.
   */
  public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);

  /** The storage's name: {@code relaykit.storage=jdbc}. */
  public static final String NAME = "jdbc";
  /** An alias of {@link #NAME} meaning H2; with a PostgreSQL URL it is deprecated. */
  public static final String H2 = "h2";
  /** An alias of {@link #NAME} meaning PostgreSQL: refused with any other database's URL. */
  public static final String POSTGRES = "postgres";
  /** Every value of {@code relaykit.storage} that selects this storage. */
  public static final List<String> NAMES = List.of(NAME, H2, POSTGRES);

  private static final System.Logger LOG = System.getLogger(JdbcStorageConfig.class.getName());
  private static final AtomicBoolean H2_WITH_POSTGRES_LOGGED = new AtomicBoolean();

  private final String jdbcUrl;
  private final String username;
  private final String password;
  private final int poolSize;
  private final String tablePrefix;
  private final Duration lease;
  private final Duration retention;
  private final LifecycleListener listener;
  private final boolean migrate;
  private final DatabaseClock databaseClock;
  private final OutboxBound outboxBound;
  private final OutboxOrderScope outboxOrderScope;
  private final boolean outboxNotifications;
  private final Duration outboxWakeInterval;
  private final MetricsListener outboxMetrics;
  private final Dialect dialect;

  private JdbcStorageConfig(Builder b, Dialect dialect) {
    this.jdbcUrl = b.jdbcUrl;
    this.username = b.username;
    this.password = b.password;
    this.poolSize = b.poolSize;
    this.tablePrefix = b.tablePrefix;
    this.lease = b.lease;
    this.retention = b.retention;
    this.listener = b.listener;
    this.migrate = b.migrate;
    this.databaseClock = b.databaseClock;
    this.outboxBound = b.outboxBound;
    this.outboxOrderScope = b.outboxOrderScope;
    this.outboxNotifications = b.outboxNotifications;
    this.outboxWakeInterval = b.outboxWakeInterval;
    this.outboxMetrics = b.outboxMetrics;
    this.dialect = dialect;
  }

  /**
   * A builder holding what the {@code relaykit.jdbc.*} keys of {@code settings} say (see {@link
   * JdbcConfigKeys}), for code to add what settings cannot carry (a listener, a database clock).
   * The lease defaults to {@code relaykit.relay.lease} and the retention to {@code
   * relaykit.idempotency.retention}, as a deployment's other blocks use them.
   *
   * @param settings the deployment's settings
   * @return a builder; {@link Builder#build()} validates it
   * @throws IllegalArgumentException naming the key (and its environment variable) when {@value
   *     JdbcConfigKeys#URL} is unset, or the key and value of an invalid setting
   */
  public static Builder builderFrom(Settings settings) {
    Builder b = builder()
        .jdbcUrl(settings.require(JdbcConfigKeys.URL))
        .username(settings.getString(JdbcConfigKeys.USERNAME, null))
        .password(settings.getString(JdbcConfigKeys.PASSWORD, null))
        .poolSize(settings.getInt(JdbcConfigKeys.POOL_SIZE, DEFAULT_POOL_SIZE))
        .tablePrefix(settings.getString(JdbcConfigKeys.TABLE_PREFIX, DEFAULT_TABLE_PREFIX))
        .lease(settings.getDuration(JdbcConfigKeys.LEASE, RelaySettings.from(settings).lease()))
        .retention(settings.getDuration(JdbcConfigKeys.RETENTION,
            IdempotencySettings.from(settings).retention()))
        .migrate(settings.getBoolean(JdbcConfigKeys.MIGRATE, true))
        .outboxOrderScope(settings.getEnum(JdbcConfigKeys.OUTBOX_ORDER_SCOPE,
            OutboxOrderScope.class, OutboxOrderScope.KEY))
        .outboxNotifications(settings.getBoolean(JdbcConfigKeys.OUTBOX_NOTIFICATIONS, true))
        .outboxWakeInterval(settings.getDuration(JdbcConfigKeys.OUTBOX_WAKE_INTERVAL,
            JdbcStorage.DEFAULT_OUTBOX_WAKE_INTERVAL));
    if (settings.isSet(JdbcConfigKeys.OUTBOX_MAX_UNSENT)) {
      b.outboxBound(new OutboxBound(settings.getLong(JdbcConfigKeys.OUTBOX_MAX_UNSENT, 1),
          settings.getEnum(JdbcConfigKeys.OUTBOX_OVER_BOUND, OutboxBound.OverBound.class,
              OutboxBound.OverBound.REFUSE)));
    } else if (settings.isSet(JdbcConfigKeys.OUTBOX_OVER_BOUND)) {
      throw new IllegalArgumentException(JdbcConfigKeys.OUTBOX_OVER_BOUND + " needs "
          + JdbcConfigKeys.OUTBOX_MAX_UNSENT);
    }
    return b;
  }

  /**
   * The config the {@code relaykit.jdbc.*} keys of {@code settings} describe; see {@link
   * #builderFrom(Settings)}.
   *
   * @param settings the deployment's settings
   * @return the validated config
   * @throws IllegalArgumentException naming the key and value that are missing or invalid
   */
  public static JdbcStorageConfig from(Settings settings) {
    try {
      return builderFrom(settings).build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid relaykit.jdbc settings: " + e.getMessage(), e);
    }
  }

  /**
   * Checks the storage name a deployment chose ({@code relaykit.storage}) against the database its
   * URL names: {@code postgres} needs a {@code jdbc:postgresql:} URL; {@code h2} with a PostgreSQL
   * URL (the setting older releases documented) is accepted for one more release and logs one
   * WARNING line per JVM naming {@code relaykit.storage=postgres} (or {@code jdbc}) instead; any
   * other name is not checked.
   *
   * @param storage the value of {@code relaykit.storage} as configured; may be null
   * @param jdbcUrl the database's JDBC URL; may be null
   * @return the deprecation line when {@code h2} names a PostgreSQL URL, else null
   * @throws IllegalArgumentException naming both the storage and the URL's database (never its
   *     credentials) when {@code postgres} names a URL that is not PostgreSQL's
   */
  public static String checkStorageName(String storage, String jdbcUrl) {
    String name = storage == null ? "" : storage.strip().toLowerCase(Locale.ROOT);
    boolean postgresUrl = jdbcUrl != null
        && jdbcUrl.strip().toLowerCase(Locale.ROOT).startsWith("jdbc:postgresql:");
    if (name.equals(POSTGRES) && !postgresUrl) {
      throw new IllegalArgumentException("relaykit.storage=postgres needs a PostgreSQL URL"
          + " (jdbc:postgresql:...), but the database URL is " + scheme(jdbcUrl) + "; set"
          + " relaykit.storage=jdbc to use that database, or point the URL at PostgreSQL");
    }
    if (name.equals(H2) && postgresUrl) {
      String line = "relaykit.storage=h2 with a PostgreSQL URL is deprecated and accepted for one"
          + " more release; set relaykit.storage=postgres (or jdbc)";
      if (H2_WITH_POSTGRES_LOGGED.compareAndSet(false, true)) {
        LOG.log(System.Logger.Level.WARNING, line);
      }
      return line;
    }
    return null;
  }

  /** The URL's scheme up to the database's kind ({@code jdbc:h2:...}), never its credentials. */
  private static String scheme(String jdbcUrl) {
    if (jdbcUrl == null) {
      return "unset";
    }
    String[] parts = jdbcUrl.strip().split(":", 3);
    return parts.length >= 2 ? parts[0] + ":" + parts[1] + ":..."
        : "'" + parts[0].substring(0, Math.min(parts[0].length(), 20)) + "'";
  }

  /** This config with {@code listener} in place of its own (null for none). */
  JdbcStorageConfig withListener(LifecycleListener listener) {
    Builder b = builder().jdbcUrl(jdbcUrl).username(username).password(password)
        .poolSize(poolSize).tablePrefix(tablePrefix).lease(lease).retention(retention)
        .listener(listener).migrate(migrate).databaseClock(databaseClock)
        .outboxBound(outboxBound).outboxOrderScope(outboxOrderScope)
        .outboxMetrics(outboxMetrics).outboxNotifications(outboxNotifications)
        .outboxWakeInterval(outboxWakeInterval);
    return new JdbcStorageConfig(b, dialect);
  }

  /**
   * A builder with every default of the table above; only {@code jdbcUrl} must be set.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The URL as configured.
   *
   * @return the JDBC URL given to the builder, without the settings {@link #effectiveJdbcUrl()}
   *     adds
   */
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /**
   * The URL relaykit connects with: H2 URLs gain the crash-safe settings described above.
   *
   * @return {@link #jdbcUrl()} for PostgreSQL; for H2, {@link #jdbcUrl()} (a file URL with the
   *     {@code retry:} file system) plus each of {@code WRITE_DELAY=0}, {@code
   *     LOCK_TIMEOUT=10000} and (in-memory only) {@code DB_CLOSE_DELAY=-1} that it does not set
   *     itself
   */
  public String effectiveJdbcUrl() {
    return effectiveJdbcUrl(true);
  }

  /**
   * {@link #effectiveJdbcUrl()}, with or without the {@code retry:} file system: without it when
   * the application already opened the same file database in this JVM with the URL it gave
   * (H2 keeps one database per URL name, so the two names would be two databases on one file).
   */
  String effectiveJdbcUrl(boolean retry) {
    if (dialect != Dialect.H2) {
      return jdbcUrl;
    }
    String url = retry ? retryOnInterrupt(jdbcUrl) : jdbcUrl;
    String upper = url.toUpperCase(Locale.ROOT);
    if (!upper.contains(";WRITE_DELAY=")) {
      url += ";WRITE_DELAY=0";
    }
    if (!upper.contains(";LOCK_TIMEOUT=")) {
      url += ";LOCK_TIMEOUT=10000";
    }
    if (upper.startsWith("JDBC:H2:MEM:") && !upper.contains(";DB_CLOSE_DELAY=")) {
      url += ";DB_CLOSE_DELAY=-1";
    }
    return url;
  }

  /**
   * An H2 file URL with H2's {@code retry:} file system, unless the URL names a file system or a
   * server itself: a {@code FileChannel} closes itself when the thread doing I/O on it is
   * interrupted, and H2 then closes the whole database ("The database has been closed"), for
   * every connection, until the process restarts. {@code retry:} reopens the file and repeats the
   * operation instead, so one caller's interrupt fails at most that caller's statement.
   */
  static String retryOnInterrupt(String url) {
    String head = "jdbc:h2:";
    if (!url.regionMatches(true, 0, head, 0, head.length())) {
      return url;
    }
    String rest = url.substring(head.length());
    if (rest.regionMatches(true, 0, "file:", 0, 5)) {
      rest = rest.substring(5);
    }
    // mem:, tcp:, ssl:, retry:, async:, nio:, split:, zip: ... name a database kind or a file
    // system; a one-letter prefix is a Windows drive.
    java.util.regex.Matcher named = java.util.regex.Pattern.compile("^[A-Za-z]{2,}:")
        .matcher(rest);
    if (named.find()) {
      return url;
    }
    return head + "retry:" + rest;
  }

  /**
   * The user the pool connects as.
   *
   * @return the user name, or null to use the URL's (or the driver's default)
   */
  public String username() {
    return username;
  }

  /**
   * The password the pool connects with; {@link #toString()} never shows it.
   *
   * @return the password, or null for none
   */
  public String password() {
    return password;
  }

  /**
   * The most connections the storage's own pool opens.
   *
   * @return the pool size, in 1..200
   */
  public int poolSize() {
    return poolSize;
  }

  /**
   * The prefix of every relaykit table and index, so several storages can share one schema.
   *
   * @return a letter followed by up to 29 letters, digits or underscores
   */
  public String tablePrefix() {
    return tablePrefix;
  }

  /**
   * How long a relay holds the outbox rows it claimed; after that another relay may take them
   * over, so a row whose publish outlasts its lease may be sent twice.
   *
   * @return a positive duration
   */
  public Duration lease() {
    return lease;
  }

  /**
   * How long sent outbox rows and completed idempotency keys are kept before they are purged.
   *
   * @return a positive duration
   */
  public Duration retention() {
    return retention;
  }

  /**
   * The listener the storage's outbox reports to (see {@link JdbcOutboxStore}); empty for none. It
   * runs on the caller's thread inside {@code append}: it must be fast and must not block.
   *
   * @return the configured listener, or empty for none
   */
  public Optional<LifecycleListener> listener() {
    return Optional.ofNullable(listener);
  }

  /**
   * The bound the outbox's appends are checked against.
   *
   * @return the bound; {@link OutboxBound#unbounded()} unless one was set
   */
  public OutboxBound outboxBound() {
    return outboxBound;
  }

  /**
   * What per-key order spans for rows appended through {@link JdbcStorage#outboxStore()}.
   *
   * @return the scope; {@link OutboxOrderScope#KEY} unless one was set
   */
  public OutboxOrderScope outboxOrderScope() {
    return outboxOrderScope;
  }

  /**
   * Whether appends NOTIFY and a listener wakes relays across processes (PostgreSQL only).
   *
   * @return true unless turned off
   */
  public boolean outboxNotifications() {
    return outboxNotifications;
  }

  /**
   * The shortest time between two NOTIFYs of the storage's appends.
   *
   * @return the interval, {@code >= 0}
   */
  public Duration outboxWakeInterval() {
    return outboxWakeInterval;
  }

  /**
   * Where the outbox stores of {@link JdbcStorage#outboxStore()} report each claim's walk ({@link
   * MetricsListener#outboxClaimWalked}).
   *
   * @return the listener; {@link MetricsListener#noop()} unless one was set
   */
  public MetricsListener outboxMetrics() {
    return outboxMetrics;
  }

  /**
   * The clock leases, takeovers and retention are decided on.
   *
   * @return the clock; {@link DatabaseClock#database()} unless one was set
   */
  public DatabaseClock databaseClock() {
    return databaseClock;
  }

  /**
   * Whether opening creates or migrates the tables (true) or only verifies their version.
   *
   * @return true (the default) to run DDL when opening; false to only check the schema version
   */
  public boolean migrate() {
    return migrate;
  }

  /**
   * The dialect the URL selects.
   *
   * @return {@link Dialect#POSTGRESQL} for a {@code jdbc:postgresql:} URL, {@link Dialect#H2}
   *     for a {@code jdbc:h2:} one
   */
  public Dialect dialect() {
    return dialect;
  }

  @Override
  public String toString() {
    // No password: configs end up in logs.
    return "JdbcStorageConfig[jdbcUrl=" + jdbcUrl + ", username=" + username + ", poolSize="
        + poolSize + ", tablePrefix=" + tablePrefix + ", lease=" + lease + ", retention="
        + retention + ", outboxBound=" + outboxBound + ", outboxOrderScope=" + outboxOrderScope + ", migrate=" + migrate + ", listener=" + (listener == null ? "none" : listener) + "]";
  }

  /** Builds a validated {@link JdbcStorageConfig}. */
  public static final class Builder {
    private String jdbcUrl;
    private String username;
    private String password;
    private int poolSize = DEFAULT_POOL_SIZE;
    private String tablePrefix = DEFAULT_TABLE_PREFIX;
    private Duration lease = DEFAULT_LEASE;
    private Duration retention = DEFAULT_RETENTION;
    private LifecycleListener listener;
    private boolean migrate = true;
    private DatabaseClock databaseClock = DatabaseClock.database();
    private OutboxBound outboxBound = OutboxBound.unbounded();
    private OutboxOrderScope outboxOrderScope = OutboxOrderScope.KEY;
    private MetricsListener outboxMetrics = MetricsListener.noop();
    private boolean outboxNotifications = true;
    private Duration outboxWakeInterval = JdbcStorage.DEFAULT_OUTBOX_WAKE_INTERVAL;

    private Builder() {}

    /**
     * Whether, on PostgreSQL, appends send a coalesced NOTIFY and a listener thread wakes this
     * JVM's relays on other processes' NOTIFYs (see {@link JdbcStorage#outboxWakeup()}). Default
     * true; false leaves relays of other processes to their poll. No effect on H2.
     *
     * @param outboxNotifications whether to notify and listen
     * @return this builder
     */
    public Builder outboxNotifications(boolean outboxNotifications) {
      this.outboxNotifications = outboxNotifications;
      return this;
    }

    /**
     * The shortest time between two NOTIFYs of this storage's appends (PostgreSQL). Default 10 ms:
     * PostgreSQL serialises the commits of notifying transactions, so at most 100 per second per
     * storage notify; a shorter interval wakes other processes sooner after a burst and
     * serialises more commits. Zero notifies in every append.
     *
     * @param outboxWakeInterval the interval, {@code >= 0}
     * @return this builder
     * @throws IllegalArgumentException if null or negative
     */
    public Builder outboxWakeInterval(Duration outboxWakeInterval) {
      if (outboxWakeInterval == null || outboxWakeInterval.isNegative()) {
        throw new IllegalArgumentException("outboxWakeInterval must be a duration >= 0, was "
            + outboxWakeInterval);
      }
      this.outboxWakeInterval = outboxWakeInterval;
      return this;
    }

    /**
     * Where the storage's outbox stores report how much each claim walked: key heads examined and
     * rows read ({@link MetricsListener#outboxClaimWalked}, once per claim on the claiming thread,
     * after its transaction; H2 only, see {@link JdbcOutboxStore}). Pass the same listener as the
     * relay's, e.g. a Micrometer binder. Cost: one listener call per claim. What the listener
     * throws is contained and never fails the claim.
     *
     * @param outboxMetrics the listener; {@link MetricsListener#noop()} (the default) for none
     * @return this builder
     * @throws IllegalArgumentException if {@code outboxMetrics} is null
     */
    public Builder outboxMetrics(MetricsListener outboxMetrics) {
      if (outboxMetrics == null) {
        throw new IllegalArgumentException("outboxMetrics must not be null:"
            + " use MetricsListener.noop()");
      }
      this.outboxMetrics = outboxMetrics;
      return this;
    }

    /**
     * What per-key order spans (see {@link OutboxOrderScope}). Default {@link
     * OutboxOrderScope#KEY}: a key across all destinations.
     *
     * @param outboxOrderScope the scope of per-key order
     * @return this builder
     * @throws IllegalArgumentException if null
     */
    public Builder outboxOrderScope(OutboxOrderScope outboxOrderScope) {
      if (outboxOrderScope == null) {
        throw new IllegalArgumentException("outboxOrderScope must not be null");
      }
      this.outboxOrderScope = outboxOrderScope;
      return this;
    }

    /**
     * The most unsent outbox rows and what an append over them does. Default unbounded.
     *
     * @param outboxBound the bound appends are checked against
     * @return this builder
     * @throws IllegalArgumentException if null
     */
    public Builder outboxBound(OutboxBound outboxBound) {
      if (outboxBound == null) {
        throw new IllegalArgumentException("outboxBound must not be null: use"
            + " OutboxBound.unbounded()");
      }
      this.outboxBound = outboxBound;
      return this;
    }

    /**
     * The database to use. Required; checked by {@link #build()}.
     *
     * @param jdbcUrl a {@code jdbc:h2:} or {@code jdbc:postgresql:} URL
     * @return this builder
     */
    public Builder jdbcUrl(String jdbcUrl) {
      this.jdbcUrl = jdbcUrl;
      return this;
    }

    /**
     * The user to connect as. Default none.
     *
     * @param username the user name, or null for the URL's
     * @return this builder
     */
    public Builder username(String username) {
      this.username = username;
      return this;
    }

    /**
     * The password to connect with. Default none.
     *
     * @param password the password, or null for none
     * @return this builder
     */
    public Builder password(String password) {
      this.password = password;
      return this;
    }

    /**
     * The most connections the pool opens. Default {@value JdbcStorageConfig#DEFAULT_POOL_SIZE}.
     *
     * @param poolSize 1..200, checked by {@link #build()}
     * @return this builder
     */
    public Builder poolSize(int poolSize) {
      this.poolSize = poolSize;
      return this;
    }

    /**
     * The prefix of every table and index. Default {@value
     * JdbcStorageConfig#DEFAULT_TABLE_PREFIX}.
     *
     * @param tablePrefix a letter, then up to 29 letters, digits or underscores; checked by
     *     {@link #build()}
     * @return this builder
     */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /**
     * How long a relay holds claimed outbox rows. Default 30 s.
     *
     * @param lease a positive duration, checked by {@link #build()}; make it longer than a
     *     relay's slowest publish of one batch, or its rows may be taken over and sent twice
     * @return this builder
     */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /**
     * How long sent outbox rows and completed idempotency keys are kept. Default 7 days.
     *
     * @param retention a positive duration, checked by {@link #build()}; a redelivery later than
     *     this after completion is no longer recognised as a duplicate
     * @return this builder
     */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /**
     * Where the outbox reports its steps; null (the default) for nowhere.
     *
     * @param listener the listener, called on the appending thread; or null
     * @return this builder
     */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * The clock leases, takeovers and retention are decided on: {@link DatabaseClock#database()}
     * (the default) or, for tests and single-host deployments, {@link DatabaseClock#of}.
     *
     * @param databaseClock the clock
     * @return this builder
     * @throws IllegalArgumentException if null
     */
    public Builder databaseClock(DatabaseClock databaseClock) {
      if (databaseClock == null) {
        throw new IllegalArgumentException(
            "databaseClock must not be null: use DatabaseClock.database()");
      }
      this.databaseClock = databaseClock;
      return this;
    }

    /**
     * Whether opening creates or migrates the tables (true, the default) or only checks that they
     * are at this build's version, failing with a {@link SchemaVersionException} that names the
     * missing scripts (false).
     *
     * @param migrate true to run DDL when opening, false to only verify the version
     * @return this builder
     */
    public Builder migrate(boolean migrate) {
      this.migrate = migrate;
      return this;
    }

    /**
     * Checks every field and builds the config; the builder can be reused.
     *
     * @return an immutable config
     * @throws IllegalArgumentException naming the field: a blank or unsupported jdbcUrl, a pool
     *     size outside 1..200, an invalid table prefix, a non-positive lease or retention
     */
    public JdbcStorageConfig build() {
      Dialect d = Dialect.forUrl(jdbcUrl);
      if (poolSize < 1 || poolSize > 200) {
        throw new IllegalArgumentException("poolSize must be in 1..200, was " + poolSize);
      }
      Tables.requireValidPrefix(tablePrefix);
      requirePositive("lease", lease);
      requirePositive("retention", retention);
      return new JdbcStorageConfig(this, d);
    }

    private static void requirePositive(String field, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(field + " must be a positive duration, was " + d);
      }
    }
  }
}

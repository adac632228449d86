package io.relaykit.storage.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Versioned DDL, shipped as SQL scripts per dialect: {@code V<n>__<name>.sql} under {@link
 * #scriptDirectory}, with the placeholder {@code ${prefix}} for the table prefix (Flyway's
 * placeholder syntax, so Flyway or Liquibase users can run the same files). Each script ends by
 * recording its version in {@code <prefix>schema_version}, so a database migrated by a tool is
 * recognised here like one migrated by relaykit.
 *
 * <h2>How a storage opens</h2>
 * <ol>
 *   <li>The version is read first, with no DDL: a schema that is current opens with DML-only
 *       credentials, and a schema written by a newer relaykit is refused ({@link
 *       SchemaVersionException}).
 *   <li>With {@code migrate=false} an older schema is refused with an error naming the missing
 *       versions and the scripts that add them.
 *   <li>Otherwise the missing scripts run under a lock, and the version is read again under it, so
 *       two instances opening one fresh database at once both end at the same schema: PostgreSQL
 *       takes a transaction-scoped advisory lock on (schema, prefix folded to lower case, as
 *       PostgreSQL folds the unquoted table names) and runs every pending script in
 *       one transaction (PostgreSQL DDL is transactional: a failure leaves the old version
 *       complete). H2 serialises DDL itself and commits each DDL statement on its own, so its
 *       scripts are idempotent ({@code IF NOT EXISTS}, guarded updates, a MERGE of the version
 *       row): a migration cut short by a crash is completed by the next open.
 * </ol>
 */
final class Schema {

  /**
   * The scripts, in ascending version order; version n's is the one named {@code V<n>__...}.
   * Versions are handed out to parallel lines of work, so the list may have gaps while one line
   * has landed and another has not: a database records each version it applied, and a migration
   * runs every listed version it has not applied, lowest first (see {@link #pending}).
   */
  static final List<String> SCRIPTS = List.of("V1__base.sql", "V2__dead_letter_identity.sql",
      "V3__database_clock.sql", "V4__journal_instants.sql", "V7__outbox_key_order.sql",
      "V8__request_ids_and_replay_marks.sql", "V9__outbox_claim_readiness.sql",
      "V10__outbox_head_due.sql", "V11__dead_letter_filters.sql");

  /** The newest schema version this build knows: the highest version in {@link #SCRIPTS}. */
  static final int CURRENT_VERSION = versionOf(SCRIPTS.get(SCRIPTS.size() - 1));

  /** The payload column's limit, in bytes: larger messages are refused before anything is written. */
  static final int MAX_PAYLOAD_BYTES = 1_048_576;

  /** The journal's payload limit, in UTF-8 bytes. */
  static final int MAX_JOURNAL_PAYLOAD_BYTES = 16 * 1_048_576;

  /** The placeholder for the table prefix in the scripts. */
  static final String PREFIX_PLACEHOLDER = "${prefix}";

  /** First key of PostgreSQL's two-key advisory lock: "rk" in ASCII, relaykit's lock space. */
  private static final int ADVISORY_LOCK_SPACE = 0x726b;

  /** H2 migrations in this JVM run one at a time (see {@link #migrateH2}). */
  private static final Object H2_MIGRATIONS = new Object();

  /** How often an H2 migration that lost a DDL race with another process is run again. */
  private static final int H2_MIGRATION_ATTEMPTS = 5;

  private Schema() {}

  /** The class-path folder of {@code dialect}'s scripts, e.g. {@code io/relaykit/storage/jdbc/db/h2}. */
  static String scriptDirectory(Dialect dialect) {
    return "io/relaykit/storage/jdbc/db/" + dialect.name().toLowerCase(Locale.ROOT);
  }

  /** The version of a script name {@code V<n>__<name>.sql}. */
  static int versionOf(String scriptName) {
    int end = scriptName.indexOf("__");
    if (!scriptName.startsWith("V") || end < 2) {
      throw new IllegalArgumentException("not a versioned script name: " + scriptName);
    }
    return Integer.parseInt(scriptName.substring(1, end));
  }

  /** The versions this build ships, ascending. */
  static List<Integer> versions() {
    List<Integer> out = new ArrayList<>(SCRIPTS.size());
    for (String name : SCRIPTS) {
      out.add(versionOf(name));
    }
    return out;
  }

  /** The script name of {@code version}. */
  static String scriptName(int version) {
    for (String name : SCRIPTS) {
      if (versionOf(name) == version) {
        return name;
      }
    }
    throw new IllegalArgumentException("version must be one of " + versions() + ", was "
        + version);
  }

  /** The statements of version {@code version} for {@code tables}, placeholders replaced. */
  static List<String> statements(Dialect dialect, int version, Tables tables) {
    String script = script(dialect, scriptName(version));
    return split(script.replace(PREFIX_PLACEHOLDER, tables.prefix));
  }

  /** The versions this build ships that {@code applied} lacks, ascending. */
  static List<Integer> pending(java.util.Set<Integer> applied) {
    List<Integer> out = new ArrayList<>();
    for (int v : versions()) {
      if (!applied.contains(v)) {
        out.add(v);
      }
    }
    return out;
  }

  /** The raw text of one script, placeholders in place. */
  static String script(Dialect dialect, String name) {
    String path = scriptDirectory(dialect) + "/" + name;
    try (InputStream in = Schema.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("relaykit's schema script " + path
            + " is missing from the class path: the storage-h2 jar is incomplete");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read schema script " + path, e);
    }
  }

  /**
   * Splits a script into statements at semicolons outside quotes; drops {@code --} comments and
   * blank statements. Enough for relaykit's own scripts, which use no procedural blocks.
   */
  static List<String> split(String script) {
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    boolean quoted = false;
    for (int i = 0; i < script.length(); i++) {
      char ch = script.charAt(i);
      if (!quoted && ch == '-' && i + 1 < script.length() && script.charAt(i + 1) == '-') {
        while (i < script.length() && script.charAt(i) != '\n') {
          i++;
        }
        current.append('\n');
        continue;
      }
      if (ch == '\'') {
        quoted = !quoted;
      }
      if (ch == ';' && !quoted) {
        addStatement(out, current);
        current.setLength(0);
      } else {
        current.append(ch);
      }
    }
    addStatement(out, current);
    return out;
  }

  private static void addStatement(List<String> out, StringBuilder statement) {
    String s = statement.toString().strip();
    if (!s.isEmpty()) {
      out.add(s);
    }
  }

  /**
   * Brings the tables for {@code tables} up to {@link #CURRENT_VERSION} (or, with {@code
   * apply=false}, only checks that they are there).
   *
   * @throws SchemaVersionException if the tables are at a newer version than this build knows, or
   *     at an older one and {@code apply} is false
   * @throws JdbcStorageException if the database cannot be read or a script fails
   */
  static void migrate(DataSource dataSource, Dialect dialect, Tables tables, boolean apply) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      int current = currentVersion(c, tables);
      checkNotNewer(current, tables);
      List<Integer> pending = pending(appliedVersions(c, tables));
      if (dialect == Dialect.H2) {
        refuseIgnoredCase(c, tables, apply && !pending.isEmpty());
      }
      if (!pending.isEmpty()) {
        if (!apply) {
          throw new SchemaVersionException("tables with prefix '" + tables.prefix + "' are at"
              + " schema version " + current + ", but this relaykit build needs version "
              + CURRENT_VERSION + ": apply " + missing(pending) + " from the class path folder "
              + scriptDirectory(dialect) + " (placeholder prefix=" + tables.prefix
              + "), or open the storage with migrate=true");
        }
        if (dialect == Dialect.POSTGRESQL) {
          migratePostgres(c, tables);
        } else {
          migrateH2(c, tables);
        }
      }
      if (dialect == Dialect.H2) {
        realignOutboxIdentity(c, tables);
      }
    } catch (SQLException e) {
      throw new JdbcStorageException("could not " + (apply ? "create or migrate" : "verify")
          + " relaykit tables with prefix '" + tables.prefix + "' on " + dialect + ": "
          + e.getMessage(), e);
    }
  }

  private static void migratePostgres(Connection c, Tables tables) throws SQLException {
    c.setAutoCommit(false);
    try {
      try (PreparedStatement lock = c.prepareStatement(
          "SELECT pg_advisory_xact_lock(?, hashtext(current_schema() || '.' || ?))")) {
        lock.setInt(1, ADVISORY_LOCK_SPACE);
        // Unquoted names fold to lower case: "Rk_" and "rk_" name the same tables, so they must
        // take the same lock.
        lock.setString(2, tables.prefix.toLowerCase(Locale.ROOT));
        lock.execute();
      }
      // Another instance may have migrated while this one waited for the lock.
      checkNotNewer(currentVersion(c, tables), tables);
      run(c, Dialect.POSTGRESQL, tables, pending(appliedVersions(c, tables)));
      c.commit();
    } catch (SQLException | RuntimeException | Error e) {
      // The connection may be broken (that may be why the step failed): a failing rollback or
      // reset must not replace the error that says what went wrong.
      try {
        c.rollback();
      } catch (SQLException | RuntimeException r) {
        e.addSuppressed(r);
      }
      try {
        c.setAutoCommit(true);
      } catch (SQLException | RuntimeException r) {
        e.addSuppressed(r);
      }
      throw e;
    }
    c.setAutoCommit(true);
  }

  /**
   * H2 commits each DDL statement and has no advisory lock, and two sessions racing on {@code
   * CREATE INDEX IF NOT EXISTS} can both pass the check (one then fails with "object already
   * exists"). Migrations in this JVM take turns on a lock; a race with another process (H2 in
   * server or AUTO_SERVER mode) is settled by running the idempotent script again.
   */
  private static void migrateH2(Connection c, Tables tables) throws SQLException {
    synchronized (H2_MIGRATIONS) {
      for (int attempt = 1; ; attempt++) {
        try {
          run(c, Dialect.H2, tables, pending(appliedVersions(c, tables)));
          return;
        } catch (SQLException e) {
          if (attempt == H2_MIGRATION_ATTEMPTS) {
            throw e;
          }
        }
      }
    }
  }

  private static void run(Connection c, Dialect dialect, Tables tables, List<Integer> versions)
      throws SQLException {
    for (int version : versions) {
      try (Statement s = c.createStatement()) {
        for (String sql : statements(dialect, version, tables)) {
          try {
            s.execute(sql);
          } catch (SQLException e) {
            throw new SQLException("schema version " + version + " (" + scriptName(version)
                + ") failed at: " + sql + ": " + e.getMessage(), e.getSQLState(), e);
          }
        }
      }
    }
  }

  private static String missing(List<Integer> pending) {
    List<String> names = new ArrayList<>();
    for (int v : pending) {
      names.add(scriptName(v));
    }
    return (names.size() == 1 ? "the script " : "the scripts ") + String.join(", ", names);
  }

  private static void checkNotNewer(int current, Tables tables) {
    if (current > CURRENT_VERSION) {
      throw new SchemaVersionException("tables with prefix '" + tables.prefix
          + "' are at schema version " + current + ", but this relaykit build knows versions up to "
          + CURRENT_VERSION + ": upgrade relaykit, or use another table prefix");
    }
  }

  /**
   * Moves the H2 outbox's identity past the highest sequence in the table when it is not already
   * past it. After a killed process H2 can reopen a file whose committed rows are ahead of the
   * identity generator's persisted state (seen in the demo's kill -9 test: the next append then
   * fails with a primary key violation). A no-op, two reads, when the generator is ahead, which is
   * the normal case; so a second process opening the same file while the first appends changes
   * nothing.
   */
  static void realignOutboxIdentity(Connection c, Tables tables) throws SQLException {
    long next;
    try (PreparedStatement ps = c.prepareStatement("SELECT IDENTITY_BASE FROM "
        + "INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = CURRENT_SCHEMA AND TABLE_NAME = ? "
        + "AND COLUMN_NAME = 'SEQ'")) {
      ps.setString(1, tables.outbox.toUpperCase(Locale.ROOT));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return;
        }
        next = rs.getLong(1);
      }
    }
    long max;
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COALESCE(MAX(seq), 0) FROM " + tables.outbox)) {
      rs.next();
      max = rs.getLong(1);
    }
    if (next <= max) {
      try (Statement s = c.createStatement()) {
        s.execute("ALTER TABLE " + tables.outbox + " ALTER COLUMN seq RESTART WITH " + (max + 1));
      }
    }
  }

  /**
   * Refuses an H2 database whose relaykit text columns ignore case ({@code IGNORECASE=TRUE} when
   * they were created: H2 then makes every {@code VARCHAR} a {@code VARCHAR_IGNORECASE}, and
   * {@code ALTER} cannot turn it back). Such columns would make {@code "Order-1"} and {@code
   * "order-1"} one entity version, one idempotency key, one dead letter and one request id. With
   * {@code creating}, a database with {@code IGNORECASE} on is refused before any DDL runs.
   */
  static void refuseIgnoredCase(Connection c, Tables tables, boolean creating)
      throws SQLException {
    if (creating) {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS"
              + " WHERE SETTING_NAME = 'IGNORECASE'")) {
        if (rs.next() && ("1".equals(rs.getString(1))
            || "TRUE".equalsIgnoreCase(rs.getString(1)))) {
          throw new SchemaVersionException("this H2 database has IGNORECASE=TRUE, so the tables"
              + " with prefix '" + tables.prefix + "' would compare entity ids, idempotency keys,"
              + " dead-letter ids and request ids without case ('Order-1' and 'order-1' would be"
              + " one): open the database without IGNORECASE (or SET IGNORECASE FALSE) while"
              + " relaykit creates or migrates its tables");
        }
      }
    }
    StringBuilder names = new StringBuilder();
    for (String t : List.of(tables.schemaVersion, tables.outbox, tables.outboxHead,
        tables.deadLetter, tables.idempotency, tables.versionGuard, tables.journal)) {
      names.append(names.length() == 0 ? "'" : ", '").append(t.toLowerCase(Locale.ROOT))
          .append('\'');
    }
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT TABLE_NAME, COLUMN_NAME FROM"
            + " INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = CURRENT_SCHEMA"
            + " AND DATA_TYPE = 'VARCHAR_IGNORECASE' AND LOWER(TABLE_NAME) IN (" + names + ")"
            + " ORDER BY TABLE_NAME, COLUMN_NAME")) {
      if (rs.next()) {
        throw new SchemaVersionException("relaykit's column " + rs.getString(1) + "."
            + rs.getString(2) + " ignores case (VARCHAR_IGNORECASE: the tables were created"
            + " while the H2 database had IGNORECASE=TRUE), so ids that differ only in case"
            + " would be one; recreate relaykit's tables with prefix '" + tables.prefix
            + "' with IGNORECASE off");
      }
    }
  }

  /** Every version recorded; empty when there is no schema_version table yet. */
  static java.util.Set<Integer> appliedVersions(Connection c, Tables tables) throws SQLException {
    java.util.Set<Integer> out = new java.util.TreeSet<>();
    if (!tableExists(c, tables.schemaVersion)) {
      return out;
    }
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT version FROM " + tables.schemaVersion)) {
      while (rs.next()) {
        out.add(rs.getInt(1));
      }
    }
    return out;
  }

  /** The highest version recorded; 0 when there is no schema_version table yet. */
  static int currentVersion(Connection c, Tables tables) throws SQLException {
    if (!tableExists(c, tables.schemaVersion)) {
      return 0;
    }
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT MAX(version) FROM " + tables.schemaVersion)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /**
   * Whether {@code table} exists in the connection's current schema. A catalog read rather than a
   * failing SELECT, which would abort a PostgreSQL transaction.
   */
  private static boolean tableExists(Connection c, String table) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM"
        + " INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = CURRENT_SCHEMA"
        + " AND LOWER(TABLE_NAME) = ?")) {
      ps.setString(1, table.toLowerCase(Locale.ROOT));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) > 0;
      }
    }
  }
}

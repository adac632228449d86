package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterCount;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.internal.Texts;
import io.relaykit.message.Message;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Dead letters in a table, one row per {@linkplain DeadLetter#id() dead-letter id} (message id,
 * source, consumer group): the whole original message (envelope, headers, payload), source, group,
 * reason, last exception, attempts and failure times. {@link #add} is an upsert on that id, so a
 * message dead-lettered at two destinations or by two groups keeps two rows; it validates first
 * what the columns can hold (message id, source, group and type up to 255 characters, key up to
 * 512, exception class up to 1 000, payload up to 1 MiB) and refuses the rest with an {@link
 * IllegalArgumentException} naming the field, before anything is written;
 * {@link #remove} a DELETE whose update count decides who got the row (at most one caller), and
 * {@link #replayToOutbox} moves a dead letter back into the outbox in one transaction, so replaying
 * it twice publishes it once. Replay marks ({@link #beginReplay}) are two columns of the row; their
 * leases run on the storage's {@link DatabaseClock}, so hosts never compare their own clocks.
 * Listing reads one index in order (see {@link #list} for which, and what a page costs), so a
 * filtered page reads about one page of rows; the price is seven indexes beside the primary key,
 * each one more entry for every {@link #add} and removal to write. A row whose stored envelope no
 * longer decodes is still listed and found, with a stand-in message (type {@code relaykit.undecodable},
 * the raw envelope and the decode error as headers), so one corrupt row never hides the others.
 * Thread-safe.
 */
public final class JdbcDeadLetterStore implements DeadLetterStore {

  /** On the stand-in message of a row that does not decode: why it does not. */
  public static final String DECODE_ERROR_HEADER = "dead-letter-decode-error";
  /** On the stand-in message of a row that does not decode: the row's message type column. */
  public static final String ORIGINAL_TYPE_HEADER = "dead-letter-original-type";
  private static final String UNDECODABLE_TYPE = JdbcOutboxStore.UNDECODABLE_TYPE;

  private static final String COLUMNS = "id, source, reason, exception_class, exception_message,"
      + " attempts, first_failure_at, last_failure_at, msg_type, msg_key, headers, payload,"
      + " message_id, consumer_group";

  /** The longest message id, source, group and message type the table holds, in characters. */
  public static final int MAX_NAME_LENGTH = 255;
  /** The longest message key the table holds, in characters. */
  public static final int MAX_KEY_LENGTH = 512;
  /** The longest exception class name the table holds, in characters. */
  public static final int MAX_EXCEPTION_CLASS_LENGTH = 1_000;

  private final DataSource dataSource;
  private final Dialect dialect;
  private final Tables tables;
  private final DatabaseClock databaseClock;
  private final String upsertSql;

  JdbcDeadLetterStore(DataSource dataSource, Dialect dialect, Tables tables,
      DatabaseClock databaseClock) {
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.tables = tables;
    this.databaseClock = databaseClock;
    // The replay mark is part of the upsert, so a dead letter stored again drops an old mark.
    this.upsertSql = dialect.upsert(tables.deadLetter,
        List.of((COLUMNS + ", replay_token, replay_until").split(",\\s*")), List.of("id"));
  }

  @Override
  public void add(DeadLetter deadLetter) {
    validate(deadLetter);
    Jdbc.autoCommit(dataSource, "dead letter add to " + tables.deadLetter, c -> {
      add(c, deadLetter);
      return null;
    });
  }

  /**
   * Refuses what the table cannot hold, naming the field: a null dead letter, a payload over
   * {@link Schema#MAX_PAYLOAD_BYTES}, a message id, source, group or type over {@value
   * #MAX_NAME_LENGTH} characters, a key over {@value #MAX_KEY_LENGTH}, an exception class over
   * {@value #MAX_EXCEPTION_CLASS_LENGTH}.
   */
  static void validate(DeadLetter deadLetter) {
    if (deadLetter == null) {
      throw new IllegalArgumentException("deadLetter must not be null");
    }
    if (deadLetter.message().payloadSize() > Schema.MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException("payload of dead letter " + deadLetter.id() + " is "
          + deadLetter.message().payloadSize() + " bytes, over the limit of "
          + Schema.MAX_PAYLOAD_BYTES);
    }
    Message m = deadLetter.message();
    requireFits("message id", m.id(), MAX_NAME_LENGTH);
    requireFits("source", deadLetter.source(), MAX_NAME_LENGTH);
    requireFits("group", deadLetter.group(), MAX_NAME_LENGTH);
    requireFits("message type", m.type(), MAX_NAME_LENGTH);
    requireFits("message key", m.key().orElse(null), MAX_KEY_LENGTH);
    requireFits("exception class", deadLetter.exceptionClass(), MAX_EXCEPTION_CLASS_LENGTH);
  }

  /** Whether this store's table is reached through {@code other}, so one transaction spans both. */
  boolean usesDataSource(DataSource other) {
    return dataSource == other;
  }

  void add(Connection c, DeadLetter d) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(upsertSql)) {
      bind(ps, d);
      ps.executeUpdate();
    }
  }

  /**
   * Stores every dead letter of {@code deadLetters} through {@code c}, as {@link #add(Connection,
   * DeadLetter)} one at a time would, in JDBC batches of at most {@code batchSize}: one round trip
   * per batch instead of per dead letter. Each is validated first; the caller's transaction
   * decides what stays when a batch fails part-way.
   */
  void addAll(Connection c, List<DeadLetter> deadLetters, int batchSize) throws SQLException {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize must be at least 1: " + batchSize);
    }
    deadLetters.forEach(JdbcDeadLetterStore::validate);
    try (PreparedStatement ps = c.prepareStatement(upsertSql)) {
      int pending = 0;
      for (DeadLetter d : deadLetters) {
        bind(ps, d);
        ps.addBatch();
        if (++pending == batchSize) {
          ps.executeBatch();
          pending = 0;
        }
      }
      if (pending > 0) {
        ps.executeBatch();
      }
    }
  }

  private static void bind(PreparedStatement ps, DeadLetter d) throws SQLException {
    Message m = d.message();
    ps.setString(1, d.id());
    ps.setString(2, d.source());
    ps.setString(3, d.reason());
    setNullable(ps, 4, d.exceptionClass());
    setNullable(ps, 5, d.exceptionMessage());
    ps.setInt(6, d.attempts());
    ps.setLong(7, Instants.toNanos("firstFailureAt", d.firstFailureAt()));
    ps.setLong(8, Instants.toNanos("lastFailureAt", d.lastFailureAt()));
    ps.setString(9, m.type());
    setNullable(ps, 10, m.key().orElse(null));
    ps.setString(11, Envelopes.encode(m));
    ps.setBytes(12, m.payload());
    ps.setString(13, m.id());
    setNullable(ps, 14, d.group());
    ps.setNull(15, Types.VARCHAR);
    ps.setNull(16, Types.BIGINT);
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    requireId(id);
    return Jdbc.autoCommit(dataSource, "dead letter find in " + tables.deadLetter,
        c -> select(c, id, false));
  }

  /**
   * One SELECT. The page is read in order from one index, so it reads about {@code offset +
   * limit} rows however many dead letters the table holds and however deep a keyset position
   * ({@link DeadLetterQuery#withAfter}) lies: the index of the message id, of source and group
   * together, of the exception class, of the source, of the group or of the type (the first of
   * these the query filters on), else the time index. Each holds its column, then (last failure,
   * id), and is read forward or backward ({@link DeadLetterQuery#newestFirst}). The other filters
   * are checked on the rows read, so a page filtered by two columns reads about {@code limit}
   * divided by the share of the first column's rows that pass the second. A reason filter
   * ({@link DeadLetterQuery#reasonContains}) cannot use an index: the rows of the selected range
   * are read until the page fills, all of them when fewer match. Paging by {@code offset} reads
   * the skipped rows too: page deep with a keyset position instead.
   *
   * <p>Ties in last failure time are ordered by id as the database compares text: H2 by UTF-16
   * unit, as Java; PostgreSQL by its collation (with {@code C}, by code point, which differs
   * from Java's order only between supplementary characters and U+E000..U+FFFF). Listing and
   * keyset positions use the same comparison, so keyset paging never repeats or misses a dead
   * letter whatever the collation. PostgreSQL text cannot hold U+0000: a filter value holding one
   * matches nothing, and a position id is compared up to it.
   */
  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    requireQuery(query);
    if (matchesNothing(query)) {
      return List.of();
    }
    String sql = listSql(query);
    List<Object> args = listArgs(query);
    String what = "dead letter list from " + tables.deadLetter;
    Jdbc.SqlWork<List<DeadLetter>> read = c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        bind(ps, args);
        List<DeadLetter> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.add(read(rs));
          }
        }
        return out;
      }
    };
    if (dialect != Dialect.POSTGRESQL) {
      return Jdbc.autoCommit(dataSource, what, read);
    }
    return Jdbc.inTransaction(dataSource, what, c -> {
      steerPlanner(c);
      return read.run(c);
    });
  }

  /**
   * PostgreSQL prices a random heap fetch at four sequential ones by default, so with rows of a
   * few hundred bytes it would rather walk the time index (whose heap order matches) and drop the
   * rows other filters reject than read the filter's own index: hundreds of rows for a page of
   * 50 from a table of thousands. Priced as a sequential fetch, as for cached or solid-state
   * storage, it reads the filter's index. Only for the listing's own transaction.
   */
  private static void steerPlanner(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET LOCAL random_page_cost = 1");
    }
  }

  /**
   * The executed plan of {@link #list}'s statement for {@code query} in {@code c}'s transaction,
   * with the same planner setting: for tests that count the rows a page reads.
   */
  String explainList(Connection c, DeadLetterQuery query) throws SQLException {
    String explain;
    if (dialect == Dialect.POSTGRESQL) {
      steerPlanner(c);
      explain = "EXPLAIN (ANALYZE, FORMAT JSON) ";
    } else {
      explain = "EXPLAIN ANALYZE ";
    }
    try (PreparedStatement ps = c.prepareStatement(explain + listSql(query))) {
      bind(ps, listArgs(query));
      StringBuilder plan = new StringBuilder();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
      return plan.toString();
    }
  }

  /** The SELECT {@link #list} runs for {@code query}; its parameters are {@link #listArgs}. */
  String listSql(DeadLetterQuery query) {
    Driver driver = Driver.of(query);
    String dir = query.newestFirst() ? " DESC" : "";
    StringBuilder order = new StringBuilder(" ORDER BY ");
    // H2 reads an index in order, and stops after the page, only when ORDER BY spells the index's
    // columns from the first (the leading ones are constant here) and the index is the one it
    // uses; PostgreSQL needs neither but is not hurt.
    for (String column : driver.columns) {
      order.append(column).append(dir).append(", ");
    }
    order.append("last_failure_at").append(dir).append(", id").append(dir);
    String from = tables.deadLetter + (dialect == Dialect.H2
        ? " USE INDEX (" + tables.prefix + driver.index + ")" : "");
    return "SELECT " + COLUMNS + " FROM " + from + where(query, new ArrayList<>(), true) + order
        + " OFFSET ? ROWS FETCH FIRST ? ROWS ONLY";
  }

  /** The parameters of {@link #listSql}. */
  List<Object> listArgs(DeadLetterQuery query) {
    List<Object> args = new ArrayList<>();
    where(query, args, true);
    args.add(query.offset());
    args.add(query.limit());
    return args;
  }

  /**
   * The index a page is read from: the first filter of the query that has one, in this order
   * (message id and source with group are the most selective in practice). The time index when
   * no such filter is set.
   */
  private enum Driver {
    MESSAGE("dead_letter_message", "message_id"),
    SOURCE_GROUP("dead_letter_source_group", "source", "consumer_group"),
    EXCEPTION("dead_letter_exception", "exception_class"),
    SOURCE("dead_letter_source", "source"),
    GROUP("dead_letter_group", "consumer_group"),
    TYPE("dead_letter_type", "msg_type"),
    TIME("dead_letter_time");

    final String index;
    final List<String> columns;

    Driver(String index, String... columns) {
      this.index = index;
      this.columns = List.of(columns);
    }

    static Driver of(DeadLetterQuery q) {
      if (q.messageId() != null) {
        return MESSAGE;
      }
      if (q.source() != null && q.group() != null) {
        return SOURCE_GROUP;
      }
      if (q.exceptionClass() != null) {
        return EXCEPTION;
      }
      if (q.source() != null) {
        return SOURCE;
      }
      if (q.group() != null) {
        return GROUP;
      }
      if (q.type() != null) {
        return TYPE;
      }
      return TIME;
    }
  }

  /** The value {@code q} filters {@code column} by (a column of a {@link Driver}). */
  private static String filterValue(DeadLetterQuery q, String column) {
    return switch (column) {
      case "message_id" -> q.messageId();
      case "source" -> q.source();
      case "consumer_group" -> q.group();
      case "exception_class" -> q.exceptionClass();
      case "msg_type" -> q.type();
      default -> throw new IllegalArgumentException("not a filter column: " + column);
    };
  }

  /**
   * Whether no row can match: on PostgreSQL, whose text cannot hold U+0000, a filter value that
   * holds one.
   */
  private boolean matchesNothing(DeadLetterQuery q) {
    if (dialect != Dialect.POSTGRESQL) {
      return false;
    }
    for (String v : new String[] {q.messageId(), q.reasonContains(), q.type(), q.source(),
        q.group(), q.exceptionClass()}) {
      if (v != null && v.indexOf('\u0000') >= 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * One {@code GROUP BY source, consumer_group} statement: on PostgreSQL an index-only read of
   * {@code dead_letter_source_group}, on H2 a read of it; either way O(dead letters) index
   * entries and O(maxRows) rows returned, ordered by source, then group (no group first) as the
   * database compares text (see {@link #list}).
   */
  @Override
  public List<DeadLetterCount> countBySource(int maxRows) {
    if (maxRows < 1 || maxRows > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(
          "maxRows must be in 1.." + DeadLetterQuery.MAX_LIMIT + ", was " + maxRows);
    }
    String sql = countBySourceSql();
    return Jdbc.autoCommit(dataSource, "dead letter countBySource in " + tables.deadLetter, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setInt(1, maxRows);
        List<DeadLetterCount> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.add(new DeadLetterCount(rs.getString(1), rs.getString(2), rs.getLong(3),
                Instants.fromNanos(rs.getLong(4)), Instants.fromNanos(rs.getLong(5))));
          }
        }
        return out;
      }
    });
  }

  /** The statement of {@link #countBySource}; its one parameter is maxRows. */
  String countBySourceSql() {
    return "SELECT source, consumer_group, COUNT(*), MIN(last_failure_at), MAX(last_failure_at)"
        + " FROM " + tables.deadLetter + " GROUP BY source, consumer_group"
        + " ORDER BY source, consumer_group NULLS FIRST FETCH FIRST ? ROWS ONLY";
  }

  @Override
  public long count(DeadLetterQuery query) {
    requireQuery(query);
    if (matchesNothing(query)) {
      return 0;
    }
    List<Object> args = new ArrayList<>();
    String sql = "SELECT COUNT(*) FROM " + tables.deadLetter + where(query, args, false);
    return Jdbc.autoCommit(dataSource, "dead letter count in " + tables.deadLetter, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        bind(ps, args);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    });
  }

  @Override
  public Optional<DeadLetter> remove(String id) {
    requireId(id);
    return Jdbc.inTransaction(dataSource, "dead letter remove from " + tables.deadLetter,
        c -> take(c, id));
  }

  /** Reads and deletes the row in {@code c}'s transaction; empty if another caller took it. */
  private Optional<DeadLetter> take(Connection c, String id) throws SQLException {
    Optional<DeadLetter> found = select(c, id, true);
    if (found.isEmpty()) {
      return found;
    }
    try (PreparedStatement ps = c.prepareStatement(
        "DELETE FROM " + tables.deadLetter + " WHERE id = ?")) {
      ps.setString(1, id);
      return ps.executeUpdate() == 1 ? found : Optional.empty();
    }
  }

  @Override
  public long purge(DeadLetterQuery query) {
    requireQuery(query);
    if (matchesNothing(query)) {
      return 0;
    }
    List<Object> args = new ArrayList<>();
    String sql = "DELETE FROM " + tables.deadLetter + where(query, args, false);
    return Jdbc.autoCommit(dataSource, "dead letter purge in " + tables.deadLetter, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        bind(ps, args);
        return (long) ps.executeUpdate();
      }
    });
  }

  /**
   * Deletes at most {@code max} rows whose last failure is before {@code failedBefore}, oldest
   * first, in one statement (a range scan of the {@code (last_failure_at, id)} index).
   */
  @Override
  public long purgeFailedBefore(Instant failedBefore, int max) {
    if (failedBefore == null) {
      throw new IllegalArgumentException("failedBefore must not be null");
    }
    requireMax(max);
    long before = Instants.toNanos("failedBefore", failedBefore);
    String t = tables.deadLetter;
    String sql = "DELETE FROM " + t + " WHERE id IN (SELECT id FROM " + t
        + " WHERE last_failure_at < ? ORDER BY last_failure_at, id FETCH FIRST ? ROWS ONLY)";
    return Jdbc.autoCommit(dataSource, "dead letter purgeFailedBefore in " + t, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setLong(1, before);
        ps.setInt(2, max);
        return (long) ps.executeUpdate();
      }
    });
  }

  /**
   * One bounded DELETE whose cutoff is the storage's {@link DatabaseClock} minus {@code maxAge}:
   * {@code now} is not used, so relays on hosts whose clocks disagree purge the same dead letters.
   */
  @Override
  public long purgeFailedOlderThan(Duration maxAge, int max, Instant now) {
    if (maxAge == null || maxAge.isNegative()) {
      throw new IllegalArgumentException("maxAge must be a duration >= 0, was " + maxAge);
    }
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
    requireMax(max);
    long ageNanos;
    try {
      ageNanos = maxAge.toNanos();
    } catch (ArithmeticException e) {
      return 0; // older than any stored instant can be
    }
    String t = tables.deadLetter;
    String sql = "DELETE FROM " + t + " WHERE id IN (SELECT id FROM " + t
        + " WHERE last_failure_at < ? ORDER BY last_failure_at, id FETCH FIRST ? ROWS ONLY)";
    return Jdbc.autoCommit(dataSource, "dead letter purgeFailedOlderThan in " + t, c -> {
      long cutoff = Instants.toNanos("now", databaseClock.now(c, dialect)) - ageNanos;
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setLong(1, cutoff);
        ps.setInt(2, max);
        return (long) ps.executeUpdate();
      }
    });
  }

  /**
   * Counts the rows and deletes the oldest beyond {@code keep}, at most {@code max}, in one
   * transaction: a COUNT (O(rows)) and one DELETE by the time index.
   */
  @Override
  public long trimTo(long keep, int max) {
    if (keep < 0) {
      throw new IllegalArgumentException("keep must be >= 0, was " + keep);
    }
    requireMax(max);
    String t = tables.deadLetter;
    return Jdbc.inTransaction(dataSource, "dead letter trimTo in " + t, c -> {
      long count;
      try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + t);
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        count = rs.getLong(1);
      }
      long excess = Math.min(count - keep, max);
      if (excess <= 0) {
        return 0L;
      }
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + t + " WHERE id IN (SELECT"
          + " id FROM " + t + " ORDER BY last_failure_at, id FETCH FIRST ? ROWS ONLY)")) {
        ps.setInt(1, (int) excess);
        return (long) ps.executeUpdate();
      }
    });
  }

  private static void requireMax(int max) {
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
  }

  /**
   * Moves the dead letter {@code id} back into {@code outbox}, to its source as the destination,
   * in one transaction: the dead letter is gone exactly when the outbox row exists. Replaying the
   * same id twice (two operators, a retried call) appends it once; the second call returns empty.
   * The message keeps its id and trace id. Both stores must be on this database.
   *
   * <p>A dead letter that another replay has marked ({@link #beginReplay}, as {@code
   * DeadLetterReplayer} does) is left alone while that mark is live on the database's clock, so
   * the two ways of replaying resend it once; a lapsed mark is taken over.
   *
   * <p>Cost: one transaction of two locking SELECTs, a DELETE and the outbox append.
   *
   * @param id the dead letter's id
   * @param outbox the outbox to append to (on this storage's database and connections)
   * @return the replayed dead letter, or empty if there was none
   * @throws IllegalArgumentException if {@code id} is blank or {@code outbox} is null, or the
   *     dead letter cannot be appended (see {@link JdbcOutboxStore#append}); nothing changes then
   * @throws io.relaykit.outbox.OutboxFullException if the outbox's bound refuses the append;
   *     nothing changes then
   * @throws ReplayInProgressException if another replay's mark on it is live; nothing changes
   * @throws JdbcStorageException if the database fails; the transaction rolls back
   */
  public Optional<DeadLetter> replayToOutbox(String id, JdbcOutboxStore outbox) {
    requireId(id);
    if (outbox == null) {
      throw new IllegalArgumentException("outbox must not be null");
    }
    return Jdbc.inTransaction(dataSource, "dead letter replay from " + tables.deadLetter, c -> {
      refuseLiveMark(c, id);
      Optional<DeadLetter> taken = take(c, id);
      if (taken.isPresent()) {
        outbox.append(c, taken.get().source(), taken.get().message());
      }
      return taken;
    });
  }

  /**
   * Throws {@link ReplayInProgressException} if another replay's mark on {@code id} is live on the
   * database's clock; locks the row (FOR UPDATE) so the mark cannot appear before the caller's
   * transaction ends.
   */
  private void refuseLiveMark(Connection c, String id) throws SQLException {
    String holder;
    long until;
    try (PreparedStatement ps = c.prepareStatement("SELECT replay_token, replay_until FROM "
        + tables.deadLetter + " WHERE id = ? FOR UPDATE")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return;
        }
        holder = rs.getString(1);
        until = rs.getLong(2);
      }
    }
    if (holder != null && until > Instants.toNanos("now", databaseClock.now(c, dialect))) {
      throw new ReplayInProgressException(id, Instants.fromNanos(until));
    }
  }

  @Override
  public boolean marksReplays() {
    return true;
  }

  /** One transaction: a locking SELECT, the database clock's now, and an UPDATE of the mark. */
  @Override
  public Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
    requireId(id);
    requireToken(token);
    if (lease == null || lease.isNegative() || lease.isZero()) {
      throw new IllegalArgumentException("lease must be positive, was " + lease);
    }
    long leaseNanos = lease.toNanos();
    String t = tables.deadLetter;
    return Jdbc.inTransaction(dataSource, "dead letter beginReplay in " + t, c -> {
      Optional<DeadLetter> found = select(c, id, true);
      if (found.isEmpty()) {
        return found;
      }
      String holder;
      long until;
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT replay_token, replay_until FROM " + t + " WHERE id = ?")) {
        ps.setString(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          holder = rs.getString(1);
          until = rs.getLong(2);
        }
      }
      long now = Instants.toNanos("now", databaseClock.now(c, dialect));
      if (holder != null && !holder.equals(token) && until > now) {
        throw new ReplayInProgressException(id, Instants.fromNanos(until));
      }
      try (PreparedStatement ps = c.prepareStatement(
          "UPDATE " + t + " SET replay_token = ?, replay_until = ? WHERE id = ?")) {
        ps.setString(1, token);
        ps.setLong(2, now + leaseNanos);
        ps.setString(3, id);
        ps.executeUpdate();
      }
      return found;
    });
  }

  /** One DELETE fenced by the token. */
  @Override
  public boolean finishReplay(String id, String token) {
    requireId(id);
    requireToken(token);
    return Jdbc.autoCommit(dataSource, "dead letter finishReplay in " + tables.deadLetter, c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.deadLetter
          + " WHERE id = ? AND replay_token = ?")) {
        ps.setString(1, id);
        ps.setString(2, token);
        return ps.executeUpdate() == 1;
      }
    });
  }

  /** One UPDATE fenced by the token. */
  @Override
  public boolean abandonReplay(String id, String token) {
    requireId(id);
    requireToken(token);
    return Jdbc.autoCommit(dataSource, "dead letter abandonReplay in " + tables.deadLetter, c -> {
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.deadLetter
          + " SET replay_token = NULL, replay_until = NULL WHERE id = ? AND replay_token = ?")) {
        ps.setString(1, id);
        ps.setString(2, token);
        return ps.executeUpdate() == 1;
      }
    });
  }

  private static void requireToken(String token) {
    if (token == null || token.isBlank() || token.length() > 64) {
      throw new IllegalArgumentException("token must be non-blank and at most 64 characters, was "
          + (token == null ? "null" : "'" + Texts.truncateChars(token, 80) + "'"));
    }
  }

  private Optional<DeadLetter> select(Connection c, String id, boolean forUpdate)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT " + COLUMNS + " FROM "
        + tables.deadLetter + " WHERE id = ?" + (forUpdate ? " FOR UPDATE" : ""))) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(read(rs)) : Optional.empty();
      }
    }
  }

  private static DeadLetter read(ResultSet rs) throws SQLException {
    String headers = rs.getString("headers");
    String key = rs.getString("msg_key");
    byte[] payload = rs.getBytes("payload");
    Message m;
    try {
      m = Envelopes.decode(headers, key, payload);
    } catch (RuntimeException e) {
      // A corrupt row must not hide every other dead letter from find and list.
      m = standIn(rs.getString("message_id"), rs.getString("msg_type"), key, headers, payload,
          Instants.get(rs, "first_failure_at"), e);
    }
    return new DeadLetter(m, rs.getString("source"), rs.getString("consumer_group"),
        rs.getString("reason"),
        rs.getString("exception_class"), rs.getString("exception_message"),
        rs.getInt("attempts"), Instants.get(rs, "first_failure_at"),
        Instants.get(rs, "last_failure_at"));
  }

  /**
   * The message of a row whose envelope does not decode: its id, type {@link
   * JdbcOutboxStore#UNDECODABLE_TYPE}, its key and payload, the raw envelope (cut at 8 192
   * characters) under {@link JdbcOutboxStore#RAW_ENVELOPE_HEADER} and the decode error under
   * {@link #DECODE_ERROR_HEADER}; the trace id is derived from the id, so every read shows the
   * same stand-in. Replaying it publishes the stand-in, not the lost original.
   */
  private static Message standIn(String id, String type, String key, String headers,
      byte[] payload, Instant createdAt, RuntimeException error) {
    String raw = headers == null ? "(NULL)" : Texts.prefixChars(headers, 8_192);
    String why = String.valueOf(error.getMessage());
    Map<String, String> extra = new LinkedHashMap<>();
    extra.put(JdbcOutboxStore.RAW_ENVELOPE_HEADER, raw);
    extra.put(DECODE_ERROR_HEADER, Texts.prefixChars(why, 1_000));
    if (type != null && !type.isBlank()) {
      extra.put(ORIGINAL_TYPE_HEADER, type);
    }
    return Message.builder()
        .id(id)
        .type(UNDECODABLE_TYPE)
        .key(key == null || key.isBlank() ? null : key)
        .payload(payload == null || payload.length == 0
            ? "(empty)".getBytes(StandardCharsets.UTF_8) : payload)
        .headers(extra)
        .traceId(UUID.nameUUIDFromBytes(id.getBytes(StandardCharsets.UTF_8)).toString()
            .replace("-", ""))
        .createdAt(createdAt)
        .build();
  }

  /**
   * The WHERE clause of {@code q}'s filters, and with {@code withPosition} its keyset position;
   * values go to {@code args}, never into the text.
   */
  private String where(DeadLetterQuery q, List<Object> args, boolean withPosition) {
    List<String> conditions = new ArrayList<>();
    if (q.exceptionClass() != null) {
      conditions.add("exception_class = ?");
      args.add(q.exceptionClass());
    }
    if (q.messageId() != null) {
      conditions.add("message_id = ?");
      args.add(q.messageId());
    }
    if (q.reasonContains() != null) {
      conditions.add("reason LIKE ? ESCAPE '!'");
      args.add("%" + q.reasonContains().replace("!", "!!").replace("%", "!%").replace("_", "!_")
          + "%");
    }
    if (q.type() != null) {
      conditions.add("msg_type = ?");
      args.add(q.type());
    }
    if (q.source() != null) {
      conditions.add("source = ?");
      args.add(q.source());
    }
    if (q.group() != null) {
      conditions.add("consumer_group = ?");
      args.add(q.group());
    }
    if (q.failedFrom() != null) {
      conditions.add("last_failure_at >= ?");
      args.add(Instants.toNanos("failedFrom", q.failedFrom()));
    }
    if (q.failedBefore() != null) {
      conditions.add("last_failure_at < ?");
      args.add(Instants.toNanos("failedBefore", q.failedBefore()));
    }
    DeadLetterQuery.Position after = q.after();
    if (withPosition && after != null) {
      // Spelled out rather than as a row comparison, so both databases read the index range from
      // the position's time on.
      long at = Instants.toNanos("after.lastFailureAt", after.lastFailureAt());
      String id = after.id();
      int nul = id.indexOf('\u0000');
      boolean cut = dialect == Dialect.POSTGRESQL && nul >= 0;
      if (cut) {
        // PostgreSQL text cannot hold U+0000, so no stored id does: an id after "x\0..." is an
        // id after "x", and one before it is one before "x" or "x" itself.
        id = id.substring(0, nul);
      }
      String bound = q.newestFirst() ? (cut ? "<=" : "<") : ">";
      String time = q.newestFirst() ? "<" : ">";
      Driver driver = Driver.of(q);
      if (dialect == Dialect.POSTGRESQL) {
        // A row comparison over the driving index's columns (the leading ones equal to the
        // filter's values) is one index condition to PostgreSQL, which then prices that index's
        // range right.
        List<String> columns = new ArrayList<>(driver.columns);
        columns.add("last_failure_at");
        columns.add("id");
        conditions.add("(" + String.join(", ", columns) + ") " + bound + " ("
            + "?, ".repeat(columns.size() - 1) + "?)");
        for (String column : driver.columns) {
          args.add(filterValue(q, column));
        }
        args.add(at);
        args.add(id);
      } else {
        conditions.add("last_failure_at " + time + "= ? AND (last_failure_at " + time
            + " ? OR id " + bound + " ?)");
        args.add(at);
        args.add(at);
        args.add(id);
      }
    }
    return conditions.isEmpty() ? "" : " WHERE " + String.join(" AND ", conditions);
  }

  private static void bind(PreparedStatement ps, List<Object> args) throws SQLException {
    for (int i = 0; i < args.size(); i++) {
      Object a = args.get(i);
      if (a instanceof Long) {
        ps.setLong(i + 1, (Long) a);
      } else if (a instanceof Integer) {
        ps.setInt(i + 1, (Integer) a);
      } else {
        ps.setString(i + 1, (String) a);
      }
    }
  }

  private static void setNullable(PreparedStatement ps, int i, String v) throws SQLException {
    if (v == null) {
      ps.setNull(i, Types.VARCHAR);
    } else {
      ps.setString(i, v);
    }
  }

  private static void requireFits(String field, String value, int max) {
    if (value != null && value.length() > max) {
      throw new IllegalArgumentException(field + " of a dead letter must be at most " + max
          + " characters to be stored, was " + value.length() + " ('"
          + Texts.truncateChars(value, 32) + "')");
    }
  }

  private static void requireId(String id) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("id must not be blank, was "
          + (id == null ? "null" : "'" + id + "'"));
    }
  }

  private static void requireQuery(DeadLetterQuery query) {
    if (query == null) {
      throw new IllegalArgumentException("query must not be null");
    }
  }
}

package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetter;
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
 * leases run on the storage's {@link DatabaseClock}, so hosts never compare their own clocks. Listing uses the {@code (last_failure_at, id)} index; filters other
 * than the time range are evaluated on the rows in that order. A row whose stored envelope no longer
 * decodes is still listed and found, with a stand-in message (type {@code relaykit.undecodable},
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
      ps.executeUpdate();
    }
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    requireId(id);
    return Jdbc.autoCommit(dataSource, "dead letter find in " + tables.deadLetter,
        c -> select(c, id, false));
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    requireQuery(query);
    List<Object> args = new ArrayList<>();
    String sql = "SELECT " + COLUMNS + " FROM " + tables.deadLetter + where(query, args)
        + " ORDER BY last_failure_at, id OFFSET ? ROWS FETCH FIRST ? ROWS ONLY";
    args.add(query.offset());
    args.add(query.limit());
    return Jdbc.autoCommit(dataSource, "dead letter list from " + tables.deadLetter, c -> {
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
    });
  }

  @Override
  public long count(DeadLetterQuery query) {
    requireQuery(query);
    List<Object> args = new ArrayList<>();
    String sql = "SELECT COUNT(*) FROM " + tables.deadLetter + where(query, args);
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
    List<Object> args = new ArrayList<>();
    String sql = "DELETE FROM " + tables.deadLetter + where(query, args);
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

  private static String where(DeadLetterQuery q, List<Object> args) {
    List<String> conditions = new ArrayList<>();
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

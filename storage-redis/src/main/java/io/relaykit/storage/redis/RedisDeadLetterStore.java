package io.relaykit.storage.redis;

import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.internal.LengthPrefixed;
import io.relaykit.internal.Utf8;
import io.relaykit.message.Message;
import io.relaykit.queue.Priority;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Dead letters in Redis: a hash per {@linkplain DeadLetter#id() dead-letter id} (message id, source
 * and consumer group) holding the whole message (payload bytes as Base64, headers, trace id) and
 * its failure (source, group, reason, exception, attempts, first and last failure), plus one sorted
 * set that orders them by last failure time, then id. Add and remove are single Lua scripts, so a
 * replace never leaves a twin and a removal hands a dead letter out at most once; dead letters of
 * one message at two sources or for two groups are two hashes.
 *
 * <p>Cost: add, find and remove are one round trip. Listing and counting with only a time filter
 * read just the selected range ({@code ZRANGEBYLEX}, or {@code ZREVRANGEBYLEX} newest first,
 * O(log n + page)), starting at a keyset position ({@link DeadLetterQuery#withAfter}) however deep
 * it lies. A message id, reason, type, source, group or exception-class filter has no index of
 * its own: the page scans the time range from the position in pipelined chunks of 500 and stops
 * when the page is full, so it reads about the page divided by the share of dead letters that
 * match (all of the range when fewer than a page match), holding one chunk in memory; a filtered
 * count scans the whole range. {@link #countBySource} reads every dead letter once, in pages of
 * 1 000 (O(n) reads, memory O(rows)). All keys of one store share one hash
 * tag (one Redis Cluster slot per store name), so the scripts stay valid on a cluster; the store as
 * a whole is therefore bounded by one node. Dead letters do not expire: they wait for an operator.
 * Replay marks ({@link #beginReplay}) are two fields of the hash, their lease on Redis's clock;
 * {@link #add} rewrites the hash and so drops a mark. Unreachable Redis raises {@link
 * RedisStorageException}. Thread-safe.
 */
public final class RedisDeadLetterStore implements DeadLetterStore {

  /**
   * The longest {@linkplain DeadLetter#id() dead-letter id} (message id, source and group,
   * encoded) accepted.
   */
  public static final int MAX_ID_LENGTH = 2_048;

  private static final int CHUNK = 500;
  // Instants are indexed as fixed-width decimal seconds (shifted to be non-negative) and nanos,
  // so byte order is time order and ZRANGEBYLEX selects a time range exactly, to the nanosecond.
  private static final long SECONDS_OFFSET = -Instant.MIN.getEpochSecond();
  private static final int TIME_KEY_LENGTH = 17 + 9;

  private static final Script ADD = new Script("""
      local old = redis.call('HGET', KEYS[1], 'idx')
      if old then
        redis.call('ZREM', KEYS[2], old)
      end
      redis.call('DEL', KEYS[1])
      redis.call('HSET', KEYS[1], 'idx', ARGV[1], unpack(ARGV, 2))
      redis.call('ZADD', KEYS[2], 0, ARGV[1])
      return old and 1 or 0
      """);

  private static final Script REMOVE = new Script("""
      local idx = redis.call('HGET', KEYS[1], 'idx')
      if not idx then
        return {}
      end
      local all = redis.call('HGETALL', KEYS[1])
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', KEYS[2], idx)
      return all
      """);

  /**
   * KEYS: entry. ARGV: token, lease in ms. Marks the entry on Redis's clock (TIME); answers the
   * entry's fields, {} when absent, or {'busy', until ms} when another token's mark is live.
   */
  private static final Script BEGIN_REPLAY = new Script("""
      if redis.call('EXISTS', KEYS[1]) == 0 then
        return {}
      end
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local holder = redis.call('HGET', KEYS[1], 'replay')
      if holder and holder ~= ARGV[1] then
        local untilMs = tonumber(redis.call('HGET', KEYS[1], 'replayUntil'))
        if untilMs and untilMs > now then
          return {'busy', tostring(untilMs)}
        end
      end
      redis.call('HSET', KEYS[1], 'replay', ARGV[1], 'replayUntil', tostring(now + tonumber(ARGV[2])))
      return redis.call('HGETALL', KEYS[1])
      """);

  /** KEYS: entry, index. ARGV: token. Removes the entry only while it carries the token. */
  private static final Script FINISH_REPLAY = new Script("""
      if redis.call('HGET', KEYS[1], 'replay') ~= ARGV[1] then
        return 0
      end
      local idx = redis.call('HGET', KEYS[1], 'idx')
      redis.call('DEL', KEYS[1])
      if idx then
        redis.call('ZREM', KEYS[2], idx)
      end
      return 1
      """);

  /** KEYS: entry. ARGV: token. Clears the mark only while the entry carries the token. */
  private static final Script ABANDON_REPLAY = new Script("""
      if redis.call('HGET', KEYS[1], 'replay') ~= ARGV[1] then
        return 0
      end
      redis.call('HDEL', KEYS[1], 'replay', 'replayUntil')
      return 1
      """);

  private static final String EXPECTED = "a relaykit dead letter (a hash)";

  private final RedisConnector redis;
  private final String entryPrefix;
  private final String indexKey;
  private final int maxValueBytes;

  /** The longest store name accepted. */
  public static final int MAX_NAME_LENGTH = 200;

  private final String name;

  RedisDeadLetterStore(RedisConnector redis, String name) {
    this.redis = redis;
    this.name = requireName(name);
    String prefix = redis.config().keyPrefix();
    String tag = prefix + "dlq:{" + prefix + name + "}:";
    this.entryPrefix = tag + "e:";
    this.indexKey = tag + "index";
    this.maxValueBytes = redis.config().maxValueBytes();
  }

  @Override
  public void add(DeadLetter deadLetter) {
    if (deadLetter == null) {
      throw new IllegalArgumentException("deadLetter must not be null");
    }
    String id = Keys.requireKey("id", deadLetter.id(), MAX_ID_LENGTH);
    List<String> args = new ArrayList<>();
    args.add(indexMember(deadLetter.lastFailureAt(), id));
    Message m = deadLetter.message();
    put(args, "id", id);
    put(args, "messageId", m.id());
    put(args, "type", m.type());
    put(args, "schemaVersion", Integer.toString(m.schemaVersion()));
    m.key().ifPresent(k -> put(args, "key", k));
    put(args, "payload", Base64.getEncoder().encodeToString(m.payload()));
    List<String> headers = new ArrayList<>();
    m.headers().forEach((name, value) -> {
      headers.add(name);
      headers.add(value);
    });
    put(args, "headers", LengthPrefixed.encode(headers));
    put(args, "createdAt", m.createdAt().toString());
    m.expiresAt().ifPresent(at -> put(args, "expiresAt", at.toString()));
    put(args, "priority", m.priority().name());
    put(args, "traceId", m.traceId());
    put(args, "source", deadLetter.source());
    put(args, "group", deadLetter.group());
    put(args, "reason", deadLetter.reason());
    put(args, "exceptionClass", deadLetter.exceptionClass());
    put(args, "exceptionMessage", deadLetter.exceptionMessage());
    put(args, "attempts", Integer.toString(deadLetter.attempts()));
    put(args, "firstFailureAt", deadLetter.firstFailureAt().toString());
    put(args, "lastFailureAt", deadLetter.lastFailureAt().toString());
    long size = 0;
    for (String a : args) {
      size += Utf8.length(a);
    }
    if (size > maxValueBytes) {
      throw new IllegalArgumentException("deadLetter " + id + " is " + size
          + " bytes encoded (payload " + m.payloadSize() + " bytes), over maxValueBytes "
          + maxValueBytes);
    }
    String entryKey = entryKey(id);
    try {
      ADD.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {entryKey, indexKey},
          args.toArray(String[]::new));
    } catch (RedisException e) {
      throw failure("add", entryKey, e);
    }
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    Keys.requireKey("id", id, MAX_ID_LENGTH);
    String entryKey = entryKey(id);
    Map<String, String> h;
    try {
      h = redis.sync().hgetall(entryKey);
    } catch (RedisException e) {
      throw failure("find", entryKey, e);
    }
    return h == null || h.isEmpty() ? Optional.empty() : Optional.of(decode(entryKey, h));
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    requireQuery(query);
    List<DeadLetter> page = new ArrayList<>();
    if (!hasContentFilter(query)) {
      List<String> members = range(query, query.offset(), query.limit());
      for (DeadLetter d : fetch(members)) {
        page.add(d);
      }
      return page;
    }
    int[] skipped = {0};
    scan(query, d -> {
      if (skipped[0] < query.offset()) {
        skipped[0]++;
        return true;
      }
      page.add(d);
      return page.size() < query.limit();
    });
    return page;
  }

  @Override
  public long count(DeadLetterQuery query) {
    requireQuery(query);
    if (!hasContentFilter(query)) {
      try {
        return redis.sync().zlexcount(indexKey, lexRange(query));
      } catch (RedisException e) {
        throw failure("count", indexKey, e);
      }
    }
    long[] n = {0};
    scan(query.withAfter(null).withNewestFirst(false), d -> {
      n[0]++;
      return true;
    });
    return n[0];
  }

  @Override
  public Optional<DeadLetter> remove(String id) {
    Keys.requireKey("id", id, MAX_ID_LENGTH);
    String entryKey = entryKey(id);
    List<Object> flat;
    try {
      flat = REMOVE.run(redis.sync(), ScriptOutputType.MULTI, new String[] {entryKey, indexKey});
    } catch (RedisException e) {
      throw failure("remove", entryKey, e);
    }
    if (flat == null || flat.isEmpty()) {
      return Optional.empty();
    }
    Map<String, String> h = new HashMap<>();
    for (int i = 0; i + 1 < flat.size(); i += 2) {
      h.put((String) flat.get(i), (String) flat.get(i + 1));
    }
    return Optional.of(decode(entryKey, h));
  }

  @Override
  public boolean marksReplays() {
    return true;
  }

  /** One script; the mark's lease runs on Redis's clock ({@code TIME}). */
  @Override
  public Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
    Keys.requireKey("id", id, MAX_ID_LENGTH);
    requireToken(token);
    if (lease == null || lease.isNegative() || lease.isZero()) {
      throw new IllegalArgumentException("lease must be positive, was " + lease);
    }
    String entryKey = entryKey(id);
    List<Object> flat;
    try {
      flat = BEGIN_REPLAY.run(redis.sync(), ScriptOutputType.MULTI, new String[] {entryKey},
          token, Long.toString(Math.max(1, lease.toMillis())));
    } catch (RedisException e) {
      throw failure("mark for replay", entryKey, e);
    }
    if (flat == null || flat.isEmpty()) {
      return Optional.empty();
    }
    if ("busy".equals(flat.get(0)) && flat.size() == 2) {
      throw new ReplayInProgressException(id,
          Instant.ofEpochMilli(Long.parseLong((String) flat.get(1))));
    }
    Map<String, String> h = new HashMap<>();
    for (int i = 0; i + 1 < flat.size(); i += 2) {
      h.put((String) flat.get(i), (String) flat.get(i + 1));
    }
    return Optional.of(decode(entryKey, h));
  }

  @Override
  public boolean finishReplay(String id, String token) {
    Keys.requireKey("id", id, MAX_ID_LENGTH);
    requireToken(token);
    String entryKey = entryKey(id);
    try {
      Long r = FINISH_REPLAY.run(redis.sync(), ScriptOutputType.INTEGER,
          new String[] {entryKey, indexKey}, token);
      return r != null && r == 1L;
    } catch (RedisException e) {
      throw failure("remove replayed", entryKey, e);
    }
  }

  @Override
  public boolean abandonReplay(String id, String token) {
    Keys.requireKey("id", id, MAX_ID_LENGTH);
    requireToken(token);
    String entryKey = entryKey(id);
    try {
      Long r = ABANDON_REPLAY.run(redis.sync(), ScriptOutputType.INTEGER,
          new String[] {entryKey}, token);
      return r != null && r == 1L;
    } catch (RedisException e) {
      throw failure("unmark replay of", entryKey, e);
    }
  }

  private static void requireToken(String token) {
    if (token == null || token.isBlank() || token.length() > 64) {
      throw new IllegalArgumentException("token must be non-blank and at most 64 characters, was "
          + (token == null ? "null" : token.length() + " characters"));
    }
  }

  @Override
  public long purge(DeadLetterQuery query) {
    requireQuery(query);
    List<String> ids = new ArrayList<>();
    scan(query.withPage(0, DeadLetterQuery.MAX_LIMIT).withAfter(null).withNewestFirst(false), d -> {
      ids.add(d.id());
      return true;
    });
    long removed = 0;
    for (String id : ids) {
      if (remove(id).isPresent()) {
        removed++;
      }
    }
    return removed;
  }

  /** KEYS: the index (so the script runs on the store's node). Answers Redis's now in ms. */
  private static final Script NOW_MS = new Script("""
      local t = redis.call('TIME')
      return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      """);

  /**
   * {@link #purgeFailedBefore} with the cutoff on Redis's clock ({@code TIME} on the store's node)
   * minus {@code maxAge}; {@code now} is not used, so relays on hosts whose clocks disagree purge
   * the same dead letters.
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
    Long redisNow;
    try {
      redisNow = NOW_MS.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {indexKey});
    } catch (RedisException e) {
      throw failure("read the clock for retention of", indexKey, e);
    }
    Instant cutoff;
    try {
      cutoff = Instant.ofEpochMilli(redisNow).minus(maxAge);
    } catch (ArithmeticException | java.time.DateTimeException e) {
      return 0; // older than any stored instant can be
    }
    return purgeFailedBefore(cutoff, max);
  }

  /**
   * Removes at most {@code max} dead letters whose last failure is before {@code failedBefore}:
   * one ZRANGEBYLEX of the time index, then one removal script per entry (each atomic).
   */
  @Override
  public long purgeFailedBefore(Instant failedBefore, int max) {
    if (failedBefore == null) {
      throw new IllegalArgumentException("failedBefore must not be null");
    }
    requireMax(max);
    return removeMembers(range(DeadLetterQuery.all().withFailedBetween(null, failedBefore), 0,
        max));
  }

  /**
   * Removes the oldest dead letters beyond {@code keep}, at most {@code max}: one ZCARD, one
   * ZRANGEBYLEX, one removal script per entry.
   */
  @Override
  public long trimTo(long keep, int max) {
    if (keep < 0) {
      throw new IllegalArgumentException("keep must be >= 0, was " + keep);
    }
    requireMax(max);
    long total;
    try {
      total = redis.sync().zcard(indexKey);
    } catch (RedisException e) {
      throw failure("trimTo", indexKey, e);
    }
    long excess = Math.min(total - keep, max);
    if (excess <= 0) {
      return 0;
    }
    return removeMembers(range(DeadLetterQuery.all(), 0, excess));
  }

  private long removeMembers(List<String> members) {
    long removed = 0;
    for (String member : members) {
      if (remove(member.substring(TIME_KEY_LENGTH)).isPresent()) {
        removed++;
      }
    }
    return removed;
  }

  private static void requireMax(int max) {
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
  }

  static String requireName(String name) {
    return Keys.requireName("name", name, MAX_NAME_LENGTH);
  }

  /**
   * The store's name: its keys live under it.
   *
   * @return the name given at creation
   */
  public String name() {
    return name;
  }

  /** The Redis key of the hash that holds dead letter {@code id}. */
  String entryKey(String id) {
    return entryPrefix + id;
  }

  /** The Redis key of the sorted set that orders the dead letters. */
  String indexKey() {
    return indexKey;
  }

  static String indexMember(Instant lastFailureAt, String id) {
    return timeKey(lastFailureAt) + id;
  }

  private static String timeKey(Instant at) {
    return String.format("%017d%09d", at.getEpochSecond() + SECONDS_OFFSET, at.getNano());
  }

  private static void put(List<String> args, String field, String value) {
    if (value != null) {
      args.add(field);
      args.add(value);
    }
  }

  private static boolean hasContentFilter(DeadLetterQuery q) {
    return q.hasContentFilter();
  }

  private static void requireQuery(DeadLetterQuery query) {
    if (query == null) {
      throw new IllegalArgumentException("query must not be null");
    }
  }

  /** The time range of {@code q}'s filters, without its keyset position. */
  private static Range<String> lexRange(DeadLetterQuery q) {
    Range.Boundary<String> lower = q.failedFrom() == null
        ? Range.Boundary.unbounded() : Range.Boundary.including(timeKey(q.failedFrom()));
    Range.Boundary<String> upper = q.failedBefore() == null
        ? Range.Boundary.unbounded() : Range.Boundary.excluding(timeKey(q.failedBefore()));
    return Range.from(lower, upper);
  }

  /**
   * The index range a page of {@code q} reads: its time range, narrowed to what lies strictly
   * after its keyset position in its order. Index members are the fixed-width time, then the id,
   * compared as bytes: the position's member bounds the range exactly (an id with an unpaired
   * surrogate is compared as Lettuce encodes it, with '?' in its place).
   */
  private static Range<String> pageRange(DeadLetterQuery q) {
    Range<String> range = lexRange(q);
    DeadLetterQuery.Position after = q.after();
    if (after == null) {
      return range;
    }
    String member = indexMember(after.lastFailureAt(), after.id());
    if (q.newestFirst()) {
      Range.Boundary<String> upper = range.getUpper();
      if (upper.isUnbounded() || upper.getValue().compareTo(member) > 0) {
        upper = Range.Boundary.excluding(member);
      }
      return Range.from(range.getLower(), upper);
    }
    Range.Boundary<String> lower = range.getLower();
    if (lower.isUnbounded() || lower.getValue().compareTo(member) <= 0) {
      lower = Range.Boundary.excluding(member);
    }
    return Range.from(lower, range.getUpper());
  }

  private List<String> range(DeadLetterQuery q, long offset, long count) {
    try {
      Range<String> r = pageRange(q);
      return q.newestFirst()
          ? redis.sync().zrevrangebylex(indexKey, r, Limit.create(offset, count))
          : redis.sync().zrangebylex(indexKey, r, Limit.create(offset, count));
    } catch (RedisException e) {
      throw failure("list", indexKey, e);
    }
  }

  /** Walks the query's time range in order, calling {@code visitor} with each match until false. */
  private void scan(DeadLetterQuery q, java.util.function.Predicate<DeadLetter> visitor) {
    // Resume after the last member seen rather than by offset, so removals behind the cursor do
    // not make the scan skip entries.
    Range<String> range = pageRange(q);
    while (true) {
      List<String> members;
      try {
        members = q.newestFirst()
            ? redis.sync().zrevrangebylex(indexKey, range, Limit.create(0, CHUNK))
            : redis.sync().zrangebylex(indexKey, range, Limit.create(0, CHUNK));
      } catch (RedisException e) {
        throw failure("list", indexKey, e);
      }
      for (DeadLetter d : fetch(members)) {
        if (q.matches(d) && !visitor.test(d)) {
          return;
        }
      }
      if (members.size() < CHUNK) {
        return;
      }
      String last = members.get(members.size() - 1);
      range = q.newestFirst()
          ? Range.from(range.getLower(), Range.Boundary.excluding(last))
          : Range.from(Range.Boundary.excluding(last), range.getUpper());
    }
  }

  /** Reads the dead letters behind index members, pipelined; skips ones removed meanwhile. */
  private List<DeadLetter> fetch(List<String> members) {
    if (members.isEmpty()) {
      return List.of();
    }
    List<String> keys = new ArrayList<>(members.size());
    for (String member : members) {
      keys.add(entryKey(member.substring(TIME_KEY_LENGTH)));
    }
    RedisClusterAsyncCommands<String, String> async;
    try {
      async = redis.async();
    } catch (RedisException e) {
      throw failure("list", indexKey, e);
    }
    List<RedisFuture<Map<String, String>>> futures = new ArrayList<>(keys.size());
    for (String key : keys) {
      futures.add(async.hgetall(key));
    }
    List<DeadLetter> out = new ArrayList<>(keys.size());
    long timeoutMillis = redis.config().commandTimeout().toMillis();
    for (int i = 0; i < futures.size(); i++) {
      Map<String, String> h;
      try {
        h = futures.get(i).get(timeoutMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedisStorageException("interrupted while listing dead letters", e);
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        throw failure("list", keys.get(i), cause instanceof RedisException
            ? (RedisException) cause : new RedisException(String.valueOf(cause), cause));
      } catch (TimeoutException e) {
        throw new RedisStorageException("Redis at " + redis.where()
            + " did not answer within the command timeout while listing dead letters", e);
      }
      if (h != null && !h.isEmpty()) {
        out.add(decode(keys.get(i), h));
      }
    }
    return out;
  }

  private DeadLetter decode(String entryKey, Map<String, String> h) {
    try {
      // Entries written before dead letters had their own identity keep the message id in "id".
      String messageId = h.getOrDefault("messageId", h.get("id"));
      Message.Builder b = Message.builder()
          .id(messageId)
          .type(h.get("type"))
          .schemaVersion(Integer.parseInt(h.get("schemaVersion")))
          .key(h.get("key"))
          .payload(Base64.getDecoder().decode(h.get("payload")))
          .createdAt(Instant.parse(h.get("createdAt")))
          .expiresAt(h.get("expiresAt") == null ? null : Instant.parse(h.get("expiresAt")))
          .priority(Priority.valueOf(h.get("priority")))
          .traceId(h.get("traceId"));
      List<String> headers = LengthPrefixed.decode(h.get("headers"), true);
      Map<String, String> map = new LinkedHashMap<>();
      for (int i = 0; i + 1 < headers.size(); i += 2) {
        map.put(headers.get(i), headers.get(i + 1));
      }
      b.headers(map);
      return new DeadLetter(b.build(), h.get("source"), h.get("group"), h.get("reason"),
          h.get("exceptionClass"), h.get("exceptionMessage"),
          Integer.parseInt(h.get("attempts")),
          Instant.parse(h.get("firstFailureAt")), Instant.parse(h.get("lastFailureAt")));
    } catch (RuntimeException e) {
      throw new IllegalStateException("Redis key '" + entryKey + "' at " + redis.where()
          + " is not " + EXPECTED + " that relaykit can read (" + e + "): another program or "
          + "version wrote it. Remove it with DEL.", e);
    }
  }

  private RuntimeException failure(String op, String key, RedisException e) {
    if (RedisErrors.isWrongType(e)) {
      return RedisErrors.wrongType(redis, key, EXPECTED, e);
    }
    return new RedisStorageException("Redis at " + redis.where() + " failed to " + op
        + " dead letter '" + key + "': " + e.getMessage(), e);
  }
}

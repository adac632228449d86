package io.relaykit.storage.redis;

import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.relaykit.internal.LengthPrefixed;
import io.relaykit.internal.Utf8;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueuedEvent;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link QueueJournal} in Redis, for gateways that keep their report queue in a shared Redis. It
 * stores the queue's state, not a log: each change is one Lua script that edits a few hashes and
 * sorted sets (events, attempts, next attempt times, dead reasons, first-seen times; pending, dead
 * and seen ids ordered by a sequence), so a change costs one round trip and O(log n) on the server
 * and nothing ever needs compaction. {@link #load()} reads the state back in O(n).
 *
 * <h2>Durability</h2>
 * Every change is acknowledged by Redis before the call returns, so {@link #flush()} has nothing
 * left to wait for. What "acknowledged" survives is Redis's persistence setting: with {@code
 * appendonly yes} and {@code appendfsync always} an acknowledged change is on disk (a power loss
 * keeps it); with {@code appendfsync everysec} up to about one second of changes can be lost in an
 * OS crash or power loss (a Redis process crash alone loses nothing); with no AOF (RDB snapshots
 * only, or no persistence, as the test server runs) a Redis restart loses everything since the
 * last snapshot. Replication is asynchronous: a failover can lose acknowledged changes too. Survives
 * any number of client restarts: the state lives in Redis, under the journal's name.
 *
 * <p>All keys of one journal share a hash tag, so the scripts run on Redis Cluster and the journal
 * lives on one node. Failures raise {@link JournalException} naming the journal; an event too large
 * for {@code maxValueBytes} raises {@link IllegalArgumentException}. Thread-safe.
 *
 * <h2>Failures</h2>
 * There is no buffer to fill while Redis is down: every change is one synchronous script, and
 * while the connection is down commands are rejected at once, so each change throws a {@link
 * JournalException} with outcome {@code NOT_RECORDED} without waiting (a {@code CRITICAL} enqueue
 * fails fast, and nothing grows). A change whose reply is lost (a timeout, a connection reset
 * after the command was sent) throws with outcome {@code UNKNOWN}: Redis may have run it. Every
 * change is idempotent (a repeated append keeps its place, a repeated dead letter finds nothing
 * pending), so recording it again is safe and later changes are never wedged by it.
 */
public final class RedisJournal implements QueueJournal {

  /** The longest event id accepted. */
  public static final int MAX_EVENT_ID_LENGTH = 512;

  /** The longest journal name accepted. */
  public static final int MAX_NAME_LENGTH = 200;

  // One script applies a list of changes, so one change and an atomic group are the same round
  // trip. ARGV is a run of ops, each a code and fixed arguments:
  //   A id packed attempts next seenAt | R id dropped | S id attempts next | D id attempts reason
  //   | F id
  // KEYS: 1 seq, 2 events, 3 attempts, 4 next, 5 pending, 6 dead, 7 reasons, 8 seen, 9 seenAt.
  // Every op is idempotent, so a change that Redis applied but whose reply was lost can be sent
  // again: a repeated append keeps its place (ZADD NX), a repeated dead letter finds nothing
  // pending and does nothing.
  private static final Script CHANGES = new Script("""
      local function append(id, packed, attempts, nxt, seenAt)
        local s = redis.call('INCR', KEYS[1])
        redis.call('HSET', KEYS[2], id, packed)
        redis.call('HSET', KEYS[3], id, attempts)
        redis.call('HSET', KEYS[4], id, nxt)
        redis.call('ZREM', KEYS[6], id)
        redis.call('HDEL', KEYS[7], id)
        redis.call('ZADD', KEYS[5], 'NX', s, id)
        if not redis.call('ZSCORE', KEYS[8], id) then
          redis.call('ZADD', KEYS[8], s, id)
          redis.call('HSET', KEYS[9], id, seenAt)
        end
      end
      -- A removal takes an id from pending, or else (not for DROPPED) from dead; only a pending id
      -- that was dropped is forgotten as well.
      local function remove(id, dropped)
        local pending = redis.call('ZREM', KEYS[5], id)
        if pending == 0 and (dropped == '1' or redis.call('ZREM', KEYS[6], id) == 0) then
          return
        end
        redis.call('HDEL', KEYS[2], id)
        redis.call('HDEL', KEYS[3], id)
        redis.call('HDEL', KEYS[4], id)
        redis.call('HDEL', KEYS[7], id)
        if pending == 1 and dropped == '1' then
          redis.call('ZREM', KEYS[8], id)
          redis.call('HDEL', KEYS[9], id)
        end
      end
      local function reschedule(id, attempts, nxt)
        if redis.call('ZSCORE', KEYS[5], id) then
          redis.call('HSET', KEYS[3], id, attempts)
          redis.call('HSET', KEYS[4], id, nxt)
        end
      end
      local function deadLetter(id, attempts, reason)
        if redis.call('ZREM', KEYS[5], id) == 1 then
          local s = redis.call('INCR', KEYS[1])
          redis.call('ZADD', KEYS[6], s, id)
          redis.call('HSET', KEYS[3], id, attempts)
          redis.call('HSET', KEYS[7], id, reason)
        end
      end
      local function forget(id)
        if not redis.call('ZSCORE', KEYS[5], id) then
          redis.call('ZREM', KEYS[8], id)
          redis.call('HDEL', KEYS[9], id)
        end
      end
      local i, n = 1, #ARGV
      while i <= n do
        local op = ARGV[i]
        if op == 'A' then
          append(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
          i = i + 6
        elseif op == 'R' then
          remove(ARGV[i + 1], ARGV[i + 2])
          i = i + 3
        elseif op == 'S' then
          reschedule(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
          i = i + 4
        elseif op == 'D' then
          deadLetter(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
          i = i + 4
        elseif op == 'F' then
          forget(ARGV[i + 1])
          i = i + 2
        else
          return redis.error_reply('relaykit journal: unknown op ' .. tostring(op))
        end
      end
      return n
      """);

  private final RedisConnector redis;
  private final String name;
  private final String[] keys;
  private final int maxValueBytes;
  private volatile boolean closed;

  RedisJournal(RedisConnector redis, String name) {
    this.redis = redis;
    this.name = requireName(name);
    String base = redis.config().keyPrefix() + "journal:{" + redis.config().keyPrefix() + name
        + "}:";
    this.keys = new String[] {base + "seq", base + "events", base + "attempts", base + "next",
        base + "pending", base + "dead", base + "reasons", base + "seen", base + "seenAt"};
    this.maxValueBytes = redis.config().maxValueBytes();
  }

  static String requireName(String name) {
    return Keys.requireName("name", name, MAX_NAME_LENGTH);
  }

  /**
   * The journal's name: its keys live under it, so a new instance on the same name recovers.
   *
   * @return the name given at creation
   */
  public String name() {
    return name;
  }

  @Override
  public void append(QueuedEvent event) {
    List<String> args = new ArrayList<>(6);
    addAppend(args, event);
    run("append " + event.eventId(), args);
  }

  @Override
  public void remove(String eventId, Removal removal) {
    List<String> args = new ArrayList<>(3);
    addRemove(args, eventId, removal);
    run("remove " + eventId, args);
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    List<String> args = new ArrayList<>(4);
    addReschedule(args, eventId, attempts, nextAttemptAt);
    run("reschedule " + eventId, args);
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    List<String> args = new ArrayList<>(4);
    addDeadLetter(args, eventId, attempts, reason);
    run("dead-letter " + eventId, args);
  }

  @Override
  public void forget(String eventId) {
    requireId(eventId);
    run("forget " + eventId, List.of("F", eventId));
  }

  /**
   * Atomic: one script applies every change, and Redis runs a script without interleaving any
   * other command. (A script that fails half way, because a key holds another type of value that
   * another program wrote, keeps what it did before the failure: Redis does not roll scripts back.)
   * The changes are checked whole before anything is sent.
   */
  @Override
  public long recordAtomically(List<Change> changes) {
    QueueJournal.requireChanges(changes);
    List<String> args = new ArrayList<>();
    for (Change c : changes) {
      if (c instanceof Change.Append a) {
        addAppend(args, a.event());
      } else if (c instanceof Change.Remove r) {
        addRemove(args, r.eventId(), r.removal());
      } else if (c instanceof Change.Reschedule r) {
        addReschedule(args, r.eventId(), r.attempts(), r.nextAttemptAt());
      } else if (c instanceof Change.DeadLetter d) {
        addDeadLetter(args, d.eventId(), d.attempts(), d.reason());
      } else if (c instanceof Change.Forget f) {
        requireId(f.eventId());
        args.add("F");
        args.add(f.eventId());
      }
    }
    run(changes.size() + " changes", args);
    return 0L;
  }

  private void addAppend(List<String> args, QueuedEvent event) {
    QueueJournal.requireEvent(event);
    requireId(event.eventId());
    String packed = LengthPrefixed.encode(event.name(), event.payload(), event.priority().name(),
        event.enqueuedAt().toString(), event.expiresAt() == null ? null
            : event.expiresAt().toString());
    long size = Utf8.length(packed);
    if (size > maxValueBytes) {
      throw new IllegalArgumentException("event " + event.eventId() + " is " + size
          + " bytes encoded, over maxValueBytes " + maxValueBytes);
    }
    args.add("A");
    args.add(event.eventId());
    args.add(packed);
    args.add(Integer.toString(event.attempts()));
    args.add(event.nextAttemptAt().toString());
    args.add(event.enqueuedAt().toString());
  }

  private static void addRemove(List<String> args, String eventId, Removal removal) {
    requireId(eventId);
    if (removal == null) {
      throw new IllegalArgumentException("removal must not be null");
    }
    args.add("R");
    args.add(eventId);
    args.add(removal == Removal.DROPPED ? "1" : "0");
  }

  private static void addReschedule(List<String> args, String eventId, int attempts,
      Instant nextAttemptAt) {
    requireId(eventId);
    QueueJournal.requireAttempts(attempts);
    if (nextAttemptAt == null) {
      throw new IllegalArgumentException("nextAttemptAt must not be null");
    }
    args.add("S");
    args.add(eventId);
    args.add(Integer.toString(attempts));
    args.add(nextAttemptAt.toString());
  }

  private static void addDeadLetter(List<String> args, String eventId, int attempts,
      String reason) {
    requireId(eventId);
    QueueJournal.requireAttempts(attempts);
    QueueJournal.requireDeadReason(reason);
    args.add("D");
    args.add(eventId);
    args.add(Integer.toString(attempts));
    args.add(reason);
  }

  @Override
  public JournalState load() {
    requireOpen();
    try {
      RedisClusterCommands<String, String> sync = redis.sync();
      List<String> pendingIds = sync.zrange(keys[4], 0, -1);
      List<String> deadIds = sync.zrange(keys[5], 0, -1);
      List<String> seenIds = sync.zrange(keys[7], 0, -1);
      Map<String, String> events = sync.hgetall(keys[1]);
      Map<String, String> attempts = sync.hgetall(keys[2]);
      Map<String, String> next = sync.hgetall(keys[3]);
      Map<String, String> reasons = sync.hgetall(keys[6]);
      Map<String, String> seenAt = sync.hgetall(keys[8]);
      List<QueuedEvent> pending = new ArrayList<>(pendingIds.size());
      for (String id : pendingIds) {
        pending.add(decode(id, events, attempts, next));
      }
      List<QueuedEvent> dead = new ArrayList<>(deadIds.size());
      Map<String, String> deadReasons = new LinkedHashMap<>();
      for (String id : deadIds) {
        dead.add(decode(id, events, attempts, next));
        deadReasons.put(id, reasons.get(id));
      }
      Map<String, Instant> seen = new LinkedHashMap<>();
      for (String id : seenIds) {
        seen.put(id, Instant.parse(seenAt.get(id)));
      }
      return new JournalState(pending, dead, deadReasons, seen);
    } catch (RedisException e) {
      throw new JournalException("Redis journal '" + name + "' at " + redis.where()
          + " could not be read: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      if (e instanceof JournalException) {
        throw e;
      }
      throw new JournalException("Redis journal '" + name + "' at " + redis.where()
          + " holds data relaykit cannot read (" + e + "); another program or version wrote it",
          e);
    }
  }

  private QueuedEvent decode(String id, Map<String, String> events, Map<String, String> attempts,
      Map<String, String> next) {
    String packed = events.get(id);
    if (packed == null) {
      throw new JournalException("Redis journal '" + name + "' lists event " + id
          + " but holds no data for it");
    }
    List<String> f = LengthPrefixed.decode(packed, true);
    return new QueuedEvent(id, f.get(0), f.get(1), Priority.valueOf(f.get(2)),
        Instant.parse(f.get(3)), Integer.parseInt(attempts.get(id)),
        Instant.parse(next.get(id)), f.get(4) == null ? null : Instant.parse(f.get(4)));
  }

  /** Every change is acknowledged by Redis before it returns: nothing is left to flush. */
  @Override
  public void flush() {
    requireOpen();
  }

  /** Closes this handle; the data stays in Redis. The {@link RedisStorage} owns the connection. */
  @Override
  public void close() {
    closed = true;
  }

  /** Deletes every key of this journal: its whole recorded state. */
  public void destroy() {
    try {
      redis.sync().unlink(keys);
    } catch (RedisException e) {
      throw new JournalException("Redis journal '" + name + "' at " + redis.where()
          + " could not be deleted: " + e.getMessage(), e);
    }
  }

  private void run(String what, List<String> args) {
    requireOpen();
    try {
      CHANGES.run(redis.sync(), ScriptOutputType.INTEGER, keys, args.toArray(new String[0]));
    } catch (RedisException e) {
      String detail = RedisErrors.isWrongType(e)
          ? "a key of the journal holds another type of value; another program wrote it: "
          : "";
      boolean unsent = notSent(e);
      throw new JournalException("Redis journal '" + name + "' at " + redis.where()
          + " failed to " + what + ": " + detail + e.getMessage()
          + (unsent ? " (not sent: nothing recorded)"
              : " (it may have been applied; recording it again is safe)"), e,
          unsent ? JournalException.Outcome.NOT_RECORDED : JournalException.Outcome.UNKNOWN);
    }
  }

  /**
   * Whether the command never left the client: no connection (a failed connect, or Lettuce
   * rejecting commands while disconnected). A timeout or a reset after sending is an unknown
   * outcome: Redis may have run the script.
   */
  private static boolean notSent(RedisException e) {
    if (e instanceof RedisConnectionException) {
      return true;
    }
    String m = e.getMessage();
    return m != null && m.contains("not connected");
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("Redis journal '" + name + "' is closed");
    }
  }

  private static void requireId(String eventId) {
    QueueJournal.requireEventId(eventId);
    Keys.requireKey("eventId", eventId, MAX_EVENT_ID_LENGTH);
  }
}

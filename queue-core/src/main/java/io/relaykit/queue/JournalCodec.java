package io.relaykit.queue;

import io.relaykit.internal.Utf8;
import io.relaykit.queue.QueueJournal.Removal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * The binary form of one journal change, before framing and encryption. Big-endian; strings are a
 * length and UTF-8 bytes; instants are epoch seconds and nanoseconds. Not thread-safe: one writer
 * per instance, reused across records.
 */
final class JournalCodec {
  static final byte APPEND = 1;
  static final byte REMOVE = 2;
  static final byte RESCHEDULE = 3;
  static final byte DEAD = 4;
  static final byte FORGET = 5;
  /** Written only by compaction: an id seen at a time, with no event attached. */
  static final byte SEEN = 6;
  /** Several changes written as one record (format 2): a count, then each body with its length. */
  static final byte GROUP = 7;

  private static final Priority[] PRIORITIES = Priority.values();
  private static final Removal[] REMOVALS = Removal.values();

  private byte[] buf = new byte[256];
  private int len;

  /** A buffer grown past this for one large record is dropped at the next reset. */
  static final int RETAINED_BUFFER = 64 * 1024;

  JournalCodec reset(byte type) {
    len = 0;
    if (buf.length > RETAINED_BUFFER) {
      buf = new byte[256]; // memory comes back after a burst of large records
    }
    ensure(1);
    buf[len++] = type;
    return this;
  }

  byte[] array() {
    return buf;
  }

  int length() {
    return len;
  }

  JournalCodec putByte(int b) {
    ensure(1);
    buf[len++] = (byte) b;
    return this;
  }

  JournalCodec putInt(int v) {
    ensure(4);
    buf[len++] = (byte) (v >>> 24);
    buf[len++] = (byte) (v >>> 16);
    buf[len++] = (byte) (v >>> 8);
    buf[len++] = (byte) v;
    return this;
  }

  JournalCodec putLong(long v) {
    putInt((int) (v >>> 32));
    return putInt((int) v);
  }

  JournalCodec putString(String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    putInt(bytes.length);
    ensure(bytes.length);
    System.arraycopy(bytes, 0, buf, len, bytes.length);
    len += bytes.length;
    return this;
  }

  JournalCodec putInstant(Instant t) {
    putLong(t.getEpochSecond());
    return putInt(t.getNano());
  }

  private void ensure(int extra) {
    if (len + extra > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + extra));
    }
  }

  // Encoders for each change.

  JournalCodec append(QueuedEvent e) {
    reset(APPEND).putString(e.eventId()).putString(e.name()).putString(e.payload())
        .putByte(e.priority().ordinal()).putInstant(e.enqueuedAt()).putInt(e.attempts())
        .putInstant(e.nextAttemptAt());
    if (e.expiresAt() == null) {
      putByte(0);
    } else {
      putByte(1).putInstant(e.expiresAt());
    }
    return this;
  }

  JournalCodec remove(String id, Removal removal) {
    return reset(REMOVE).putString(id).putByte(removal.ordinal());
  }

  JournalCodec reschedule(String id, int attempts, Instant next) {
    return reset(RESCHEDULE).putString(id).putInt(attempts).putInstant(next);
  }

  JournalCodec dead(String id, int attempts, String reason) {
    return reset(DEAD).putString(id).putInt(attempts).putString(reason == null ? "" : reason);
  }

  JournalCodec forget(String id) {
    return reset(FORGET).putString(id);
  }

  /** Starts a group record; add each change's body with {@link #putBody}. */
  JournalCodec group(int count) {
    return reset(GROUP).putInt(count);
  }

  /** Appends another codec's body, length first (for a group). */
  JournalCodec putBody(JournalCodec body) {
    putInt(body.len);
    ensure(body.len);
    System.arraycopy(body.buf, 0, buf, len, body.len);
    len += body.len;
    return this;
  }

  JournalCodec seen(String id, Instant at) {
    return reset(SEEN).putString(id).putInstant(at);
  }

  /** Exact encoded lengths of the bodies written by {@link #append}, {@link #seen}, {@link #dead}. */
  static long appendLength(QueuedEvent e) {
    return 43 + Utf8.length(e.eventId()) + Utf8.length(e.name()) + Utf8.length(e.payload())
        + (e.expiresAt() == null ? 0 : 12);
  }

  static long seenLength(String id) {
    return 17 + Utf8.length(id);
  }

  static long deadLength(String id, String reason) {
    return 13 + Utf8.length(id) + (reason == null ? 0 : Utf8.length(reason));
  }

  /** Thrown for a record whose checksum passed but whose contents make no sense. */
  static final class MalformedRecordException extends Exception {
    private static final long serialVersionUID = 1L;

    MalformedRecordException(String message) {
      super(message);
    }
  }

  /** Reads one decoded change and applies it to {@code state}. */
  static void apply(byte[] body, int length, ReplayState state) throws MalformedRecordException {
    if (length > 0 && body[0] == GROUP) {
      Reader g = new Reader(body, length);
      g.b();
      int count = g.i();
      if (count < 1) {
        throw new MalformedRecordException("group of " + count + " changes");
      }
      for (int i = 0; i < count; i++) {
        int n = g.i();
        g.need(n);
        if (n < 1 || body[g.pos] == GROUP) {
          throw new MalformedRecordException("invalid change " + i + " in a group");
        }
        applyOne(java.util.Arrays.copyOfRange(body, g.pos, g.pos + n), n, state);
        g.pos += n;
      }
      if (g.pos != length) {
        throw new MalformedRecordException((length - g.pos) + " unexpected trailing bytes");
      }
      return;
    }
    applyOne(body, length, state);
  }

  private static void applyOne(byte[] body, int length, ReplayState state)
      throws MalformedRecordException {
    Reader r = new Reader(body, length);
    byte type = r.b();
    switch (type) {
      case APPEND -> {
        String id = r.str();
        String name = r.str();
        String payload = r.str();
        int p = r.b();
        if (p < 0 || p >= PRIORITIES.length) {
          throw new MalformedRecordException("unknown priority " + p);
        }
        Instant enq = r.instant();
        int attempts = r.i();
        Instant next = r.instant();
        Instant exp = r.b() == 0 ? null : r.instant();
        QueuedEvent e;
        try {
          e = new QueuedEvent(id, name, payload, PRIORITIES[p], enq, attempts, next, exp);
        } catch (IllegalArgumentException ex) {
          throw new MalformedRecordException("invalid event: " + ex.getMessage());
        }
        state.append(e);
      }
      case REMOVE -> {
        String id = r.str();
        int k = r.b();
        if (k < 0 || k >= REMOVALS.length) {
          throw new MalformedRecordException("unknown removal " + k);
        }
        state.remove(id, REMOVALS[k]);
      }
      case RESCHEDULE -> state.reschedule(r.str(), r.i(), r.instant());
      case DEAD -> state.deadLetter(r.str(), r.i(), r.str());
      case FORGET -> state.forget(r.str());
      case SEEN -> state.seen(r.str(), r.instant());
      default -> throw new MalformedRecordException("unknown record type " + type);
    }
    if (r.pos != length) {
      throw new MalformedRecordException((length - r.pos) + " unexpected trailing bytes");
    }
  }

  private static final class Reader {
    final byte[] b;
    final int limit;
    int pos;

    Reader(byte[] b, int limit) {
      this.b = b;
      this.limit = limit;
    }

    private void need(int n) throws MalformedRecordException {
      if (n < 0 || pos + n > limit) {
        throw new MalformedRecordException("record ends early at byte " + pos);
      }
    }

    byte b() throws MalformedRecordException {
      need(1);
      return b[pos++];
    }

    int i() throws MalformedRecordException {
      need(4);
      int v = ((b[pos] & 0xff) << 24) | ((b[pos + 1] & 0xff) << 16) | ((b[pos + 2] & 0xff) << 8)
          | (b[pos + 3] & 0xff);
      pos += 4;
      return v;
    }

    long l() throws MalformedRecordException {
      long hi = i() & 0xffffffffL;
      long lo = i() & 0xffffffffL;
      return (hi << 32) | lo;
    }

    String str() throws MalformedRecordException {
      int n = i();
      need(n);
      String s = new String(b, pos, n, StandardCharsets.UTF_8);
      pos += n;
      return s;
    }

    Instant instant() throws MalformedRecordException {
      long sec = l();
      int nano = i();
      try {
        return Instant.ofEpochSecond(sec, nano);
      } catch (RuntimeException e) {
        throw new MalformedRecordException("invalid instant " + sec + "s " + nano + "ns");
      }
    }
  }
}

package io.relaykit.transport.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * The records past a partition's committed offset that a member finished (handled, retried or
 * dead-lettered) before it handed the partition over gracefully: a Kafka offset commits one
 * position, and a key parked for its retry (or a slow record) holds it while later records finish.
 * The member writes this into the commit's metadata on a revoke or a close; the next owner reads it
 * on assignment and passes over those records instead of handling them a second time.
 *
 * <p>Form: {@code relaykit-done1:<base>:<end>:<open,...>}, offsets in base 36, each open offset as
 * its distance from the one before (the first from {@code base}). Every offset in {@code [base,
 * end)} that is not open was finished. At most {@link #MAX_CHARS} characters (the broker's {@code
 * offset.metadata.max.bytes} is 4096 by default): a longer list is cut, and {@code end} moves down
 * to the first open offset left out, so that nothing is claimed that was not finished.
 *
 * <p>It may also name the keys parked for their retry at the hand-over ({@link Parked}): a fourth
 * part, {@code <retry partition>.<retry offset>.<key>} per key (numbers in base 36, the key in
 * base64url), comma-separated. The next owner keeps such a key's records back until it has seen
 * that retry copy finish (or a bound passes), so the key's later records do not overtake its retry.
 * Keys that do not fit in {@link #MAX_CHARS} are left out (they then keep order only as far as a
 * crash would).
 *
 * <p>Read from the wire, so bad input: a text that does not parse, names another base than the
 * committed offset, or claims an absurd span is ignored (the records then run again: at least
 * once, as after a crash).
 */
final class FinishedAbove {

  static final String PREFIX = "relaykit-done1:";
  /** The longest metadata written. */
  static final int MAX_CHARS = 3000;
  /** The widest span read back: more than any member could have had in flight. */
  static final long MAX_SPAN = 10_000_000L;

  /** A key parked at the hand-over behind its retry copy at {@code offset} of retry partition
   * {@code retryPartition}. */
  record Parked(int retryPartition, long offset, String key) {}

  private final long base;
  private final long end;
  private final long[] open;
  private final List<Parked> parked;

  private FinishedAbove(long base, long end, long[] open, List<Parked> parked) {
    this.base = base;
    this.end = end;
    this.open = open;
    this.parked = parked;
  }

  /** The same, naming {@code keys} parked (a hand-over with no finished records: base = end). */
  static FinishedAbove withParked(FinishedAbove done, long base, List<Parked> keys) {
    return done == null ? new FinishedAbove(base, base, new long[0], List.copyOf(keys))
        : new FinishedAbove(done.base, done.end, done.open, List.copyOf(keys));
  }

  /** The keys parked at the hand-over, as far as they fitted. */
  List<Parked> parked() {
    return parked;
  }

  /**
   * What a tracker's pending state says, extended by {@code earlier} (what an earlier owner handed
   * over and this member has not read that far yet), or null when nothing past {@code base} was
   * finished.
   *
   * @param base the offset to commit (the lowest unfinished one)
   * @param end one past the highest offset tracked
   * @param open the unfinished offsets, ascending, the first being {@code base} if any
   * @param earlier what this member was handed for the partition, or null
   */
  static FinishedAbove of(long base, long end, long[] open, FinishedAbove earlier) {
    long to = end;
    long[] all = open;
    // carried on only when it joins what this member tracked: offsets between this member's end
    // and an earlier base were seen by nobody and are not claimed
    if (earlier != null && earlier.end > end && earlier.base <= end) {
      to = earlier.end;
      long[] later = Arrays.stream(earlier.open).filter(o -> o >= end).toArray();
      all = Arrays.copyOf(open, open.length + later.length);
      System.arraycopy(later, 0, all, open.length, later.length);
    }
    if (to <= base || all.length == to - base) {
      return null; // nothing finished past the commit position
    }
    return new FinishedAbove(base, to, all, List.of());
  }

  /** Whether {@code offset} was finished by the member that handed the partition over. */
  boolean finished(long offset) {
    return offset >= base && offset < end && Arrays.binarySearch(open, offset) < 0;
  }

  /** One past the last offset this says anything about. */
  long end() {
    return end;
  }

  /** The commit metadata, at most {@link #MAX_CHARS} characters. */
  String encode() {
    StringBuilder sb = new StringBuilder(PREFIX).append(Long.toString(base, 36)).append(':');
    int headLength = sb.length();
    StringBuilder list = new StringBuilder();
    long cut = end;
    long prev = base;
    for (long o : open) {
      String d = Long.toString(o - prev, 36);
      // room for the end (at most 13 characters) and the separators
      if (headLength + list.length() + d.length() + 16 > MAX_CHARS) {
        cut = o; // o and everything after it: not claimed
        break;
      }
      if (list.length() > 0) {
        list.append(',');
      }
      list.append(d);
      prev = o;
    }
    sb.append(Long.toString(cut, 36)).append(':').append(list);
    if (!parked.isEmpty()) {
      StringBuilder keys = new StringBuilder();
      for (Parked p : parked) {
        String e = Integer.toString(p.retryPartition(), 36) + '.' + Long.toString(p.offset(), 36)
            + '.' + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(p.key().getBytes(StandardCharsets.UTF_8));
        if (sb.length() + keys.length() + e.length() + 2 > MAX_CHARS) {
          continue; // left out: that key keeps order only as far as after a crash
        }
        keys.append(keys.length() > 0 ? "," : "").append(e);
      }
      if (keys.length() > 0) {
        sb.append(':').append(keys);
      }
    }
    return sb.toString();
  }

  /**
   * Reads commit metadata written by {@link #encode}; null when it is not ours, does not parse,
   * names another base than {@code committed} (a later commit moved on), or spans more than
   * {@link #MAX_SPAN} offsets.
   */
  static FinishedAbove decode(String metadata, long committed) {
    if (metadata == null || !metadata.startsWith(PREFIX)
        || metadata.length() > MAX_CHARS + PREFIX.length()) {
      return null;
    }
    try {
      String[] parts = metadata.substring(PREFIX.length()).split(":", -1);
      if (parts.length != 3 && parts.length != 4) {
        return null;
      }
      long base = Long.parseLong(parts[0], 36);
      long end = Long.parseLong(parts[1], 36);
      List<Parked> keys = parts.length == 4 ? decodeParked(parts[3]) : List.of();
      if (base != committed || end < base || (end == base && keys.isEmpty())
          || end - base > MAX_SPAN) {
        return null;
      }
      long[] open;
      if (parts[2].isEmpty()) {
        open = new long[0];
      } else {
        String[] ds = parts[2].split(",", -1);
        open = new long[ds.length];
        long prev = base;
        for (int i = 0; i < ds.length; i++) {
          long d = Long.parseLong(ds[i], 36);
          if (d < 0 || (i > 0 && d == 0)) {
            return null;
          }
          prev = Math.addExact(prev, d); // a forged step must not wrap round below base
          if (prev >= end) {
            return null;
          }
          open[i] = prev;
        }
      }
      return new FinishedAbove(base, end, open, keys);
    } catch (IllegalArgumentException | ArithmeticException e) {
      return null; // NumberFormatException is one, and so is a bad base64 key
    }
  }

  private static List<Parked> decodeParked(String text) {
    List<Parked> keys = new ArrayList<>();
    for (String e : text.split(",", -1)) {
      String[] f = e.split("\\.", -1);
      if (f.length != 3) {
        throw new IllegalArgumentException("not a parked key: " + e);
      }
      int partition = Integer.parseInt(f[0], 36);
      long offset = Long.parseLong(f[1], 36);
      if (partition < 0 || offset < 0) {
        throw new IllegalArgumentException("not a parked key: " + e);
      }
      keys.add(new Parked(partition, offset,
          new String(Base64.getUrlDecoder().decode(f[2]), StandardCharsets.UTF_8)));
    }
    return List.copyOf(keys);
  }

  @Override
  public String toString() {
    return "FinishedAbove[" + base + ".." + end + ", open=" + open.length + ", parked="
        + parked.size() + "]";
  }
}

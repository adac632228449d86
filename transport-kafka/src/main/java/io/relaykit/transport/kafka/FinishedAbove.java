package io.relaykit.transport.kafka;

import java.util.Arrays;

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

  private final long base;
  private final long end;
  private final long[] open;

  private FinishedAbove(long base, long end, long[] open) {
    this.base = base;
    this.end = end;
    this.open = open;
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
    return new FinishedAbove(base, to, all);
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
    return sb.append(Long.toString(cut, 36)).append(':').append(list).toString();
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
      if (parts.length != 3) {
        return null;
      }
      long base = Long.parseLong(parts[0], 36);
      long end = Long.parseLong(parts[1], 36);
      if (base != committed || end <= base || end - base > MAX_SPAN) {
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
      return new FinishedAbove(base, end, open);
    } catch (NumberFormatException | ArithmeticException e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "FinishedAbove[" + base + ".." + end + ", open=" + open.length + "]";
  }
}

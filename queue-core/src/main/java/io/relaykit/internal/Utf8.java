package io.relaykit.internal;


/**
 * The size of a string in UTF-8, without encoding it: what size limits (queue capacity in bytes,
 * broker and store value limits) count before a string is sent or stored.
 *
 * <p>{@link #length} is exactly {@code s.getBytes(StandardCharsets.UTF_8).length} for every
 * string: 1 byte below U+0080, 2 below U+0800, 4 for a surrogate pair (a supplementary character),
 * 3 for any other char, and 1 for an unpaired surrogate, which {@code getBytes} replaces with
 * {@code '?'}. One pass over the chars and no allocation; an ASCII run is scanned four chars at a
 * time.
 *
 * <p>{@link #requireWellFormed} refuses such strings where they would be stored: an unpaired
 * surrogate has no UTF-8 form, so two distinct ids that differ only there would be written as the
 * same bytes and collide after a restart.
 */
public final class Utf8 {
  private Utf8() {}

  /**
   * The number of bytes {@code s} takes encoded as UTF-8, equal to {@code
   * s.getBytes(StandardCharsets.UTF_8).length}. O(length of {@code s}), allocation-free.
   *
   * @param s the string to measure
   * @return its UTF-8 length in bytes (an unpaired surrogate counts as the one byte of {@code '?'})
   * @throws IllegalArgumentException if {@code s} is null
   */
  public static long length(String s) {
    Checks.requireNonNull("s", s);
    int length = s.length();
    int i = 0;
    // Most strings measured here (ids, names, JSON payloads) are ASCII: skip their run in blocks.
    for (int limit = length - 3; i < limit; i += 4) {
      if ((s.charAt(i) | s.charAt(i + 1) | s.charAt(i + 2) | s.charAt(i + 3)) >= 0x80) {
        break;
      }
    }
    while (i < length && s.charAt(i) < 0x80) {
      i++;
    }
    long n = i;
    for (; i < length; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (!Character.isSurrogate(c)) {
        n += 3;
      } else if (Character.isHighSurrogate(c) && i + 1 < length
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 1; // an unpaired surrogate: getBytes writes '?' in its place
      }
    }
    return n;
  }

  /**
   * The index of the first unpaired surrogate in {@code s} (a high surrogate not followed by a low
   * one, or a low one not preceded by a high one), or -1 when {@code s} is well-formed UTF-16 and
   * so encodes to UTF-8 and back unchanged. O(length), allocation-free.
   *
   * @param s the string to check
   * @return the index, or -1
   * @throws IllegalArgumentException if {@code s} is null
   */
  public static int firstUnpairedSurrogate(String s) {
    Checks.requireNonNull("s", s);
    int length = s.length();
    for (int i = 0; i < length; i++) {
      char c = s.charAt(i);
      if (c < Character.MIN_SURROGATE || c > Character.MAX_SURROGATE) {
        continue;
      }
      if (Character.isHighSurrogate(c) && i + 1 < length
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
        continue;
      }
      return i;
    }
    return -1;
  }

  /**
   * The index of the first char of {@code s} that no journal can store: an unpaired surrogate (see
   * {@link #firstUnpairedSurrogate}) or U+0000, which a PostgreSQL {@code text} column cannot hold
   * (a batch holding one fails on every retry); -1 when there is none. O(length),
   * allocation-free, one comparison per char for the common case.
   *
   * @param s the string to check
   * @return the index, or -1
   * @throws IllegalArgumentException if {@code s} is null
   */
  public static int firstUnstorable(String s) {
    Checks.requireNonNull("s", s);
    int length = s.length();
    for (int i = 0; i < length; i++) {
      char c = s.charAt(i);
      // One unsigned comparison: U+0001..U+D7FF is fine (U+0000 wraps to U+FFFF and falls out).
      if ((char) (c - 1) < Character.MIN_SURROGATE - 1 || c > Character.MAX_SURROGATE) {
        continue;
      }
      if (c == 0) {
        return i;
      }
      if (Character.isHighSurrogate(c) && i + 1 < length
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
        continue;
      }
      return i;
    }
    return -1;
  }

  /**
   * Returns {@code s} when every journal can store it exactly: well-formed UTF-16 and free of
   * U+0000 ({@link #firstUnstorable}); otherwise throws an {@link IllegalArgumentException} naming
   * {@code field}, the index and the char.
   *
   * @param field the name the exception gives {@code s}
   * @param s the string to check
   * @return {@code s}
   * @throws IllegalArgumentException if {@code s} is null, holds an unpaired surrogate or U+0000
   */
  public static String requireStorable(String field, String s) {
    Checks.requireNonNull(field, s);
    int at = firstUnstorable(s);
    if (at >= 0) {
      if (s.charAt(at) == 0) {
        throw new IllegalArgumentException(field + " holds U+0000 (NUL) at index " + at
            + ": a PostgreSQL text column cannot hold it, so no journal accepts it");
      }
      requireWellFormed(field, s);
    }
    return s;
  }

  /**
   * Returns {@code s} when it is well-formed UTF-16 (no unpaired surrogate), so that it is stored
   * exactly; otherwise throws an {@link IllegalArgumentException} naming {@code field}, the index
   * and the char.
   *
   * @param field the name the exception gives {@code s}
   * @param s the string to check
   * @return {@code s}
   * @throws IllegalArgumentException if {@code s} is null or holds an unpaired surrogate
   */
  public static String requireWellFormed(String field, String s) {
    Checks.requireNonNull(field, s);
    int at = firstUnpairedSurrogate(s);
    if (at >= 0) {
      throw new IllegalArgumentException(field + " holds an unpaired surrogate U+"
          + Integer.toHexString(s.charAt(at)).toUpperCase(java.util.Locale.ROOT) + " at index " + at
          + ": it has no UTF-8 form and would be stored as '?', colliding with other values");
    }
    return s;
  }
}

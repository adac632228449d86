package io.relaykit.queue;

import io.relaykit.internal.Checks;

/**
 * The size of a string in UTF-8, without encoding it: what size limits (queue capacity in bytes,
 * broker and store value limits) count before a string is sent or stored.
 *
 * <p>{@link #length} is exactly {@code s.getBytes(StandardCharsets.UTF_8).length} for every
 * string: 1 byte below U+0080, 2 below U+0800, 4 for a surrogate pair (a supplementary character),
 * 3 for any other char, and 1 for an unpaired surrogate, which {@code getBytes} replaces with
 * {@code '?'}. One pass over the chars and no allocation; an ASCII run is scanned four chars at a
 * time.
 */
public final class Utf8 {
  private Utf8() {}

  /**
   * The number of bytes {@code s} takes encoded as UTF-8, equal to {@code
   * s.getBytes(StandardCharsets.UTF_8).length}. O(length of {@code s}), allocation-free.
   *
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
}

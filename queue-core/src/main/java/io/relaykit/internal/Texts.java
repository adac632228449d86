package io.relaykit.internal;

/** Text bounds relaykit's modules share. Not API: see the package comment. */
public final class Texts {
  private Texts() {}

  /** Appended to a string that was cut. */
  public static final String CUT_MARK = "...";

  /**
   * {@code s} if it takes at most {@code maxBytes} bytes in UTF-8, else its longest prefix that
   * fits together with {@link #CUT_MARK}, followed by the mark. Never splits a surrogate pair, so
   * the result encodes to exactly what it shows. O(length of the kept prefix).
   *
   * @param s the text to cut
   * @param maxBytes the bound in UTF-8 bytes, mark included
   * @return {@code s} itself when it fits, else the cut text with the mark
   * @throws NullPointerException if {@code s} is null
   * @throws IllegalArgumentException if {@code maxBytes} is smaller than the mark
   */
  public static String truncateUtf8(String s, int maxBytes) {
    if (s == null) {
      throw new NullPointerException("s");
    }
    if (maxBytes < CUT_MARK.length()) {
      throw new IllegalArgumentException("maxBytes must be >= " + CUT_MARK.length() + ", was "
          + maxBytes);
    }
    if (s.length() <= maxBytes / 3) {
      return s; // at most 3 bytes per char: fits without counting
    }
    int budget = maxBytes - CUT_MARK.length();
    int bytes = 0;
    int cut = -1; // where the prefix that fits with the mark ends
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      int n;
      int chars = 1;
      if (c < 0x80) {
        n = 1;
      } else if (c < 0x800) {
        n = 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n = 4;
        chars = 2;
      } else if (Character.isSurrogate(c)) {
        n = 1; // an unpaired surrogate encodes as '?'
      } else {
        n = 3;
      }
      if (cut < 0 && bytes + n > budget) {
        cut = i;
      }
      bytes += n;
      if (bytes > maxBytes) {
        return s.substring(0, cut) + CUT_MARK;
      }
      i += chars - 1;
    }
    return s;
  }

  /**
   * {@code s} if it has at most {@code maxChars} chars, else its first {@code maxChars} chars (one
   * fewer where the last would be the high half of a surrogate pair, so a pair is never split)
   * followed by {@link #CUT_MARK}: for texts bounded in chars (a database column, a log line), where
   * the mark may exceed the bound. O(maxChars).
   *
   * @param s the text; not null
   * @param maxChars the most chars kept before the mark, {@code >= 0}
   * @return {@code s} itself when it fits, else the kept prefix and the mark
   * @throws NullPointerException if {@code s} is null
   * @throws IllegalArgumentException if {@code maxChars} is negative
   */
  public static String truncateChars(String s, int maxChars) {
    String kept = prefixChars(s, maxChars);
    return kept.length() == s.length() ? s : kept + CUT_MARK;
  }

  /**
   * {@code s} if it has at most {@code maxChars} chars, else its first {@code maxChars} chars (one
   * fewer where a surrogate pair would be split), without a mark: for a column or field that holds
   * at most {@code maxChars} chars and must not end in half a pair. O(maxChars).
   *
   * @param s the text; not null
   * @param maxChars the most chars kept, {@code >= 0}
   * @return {@code s} itself when it fits, else the kept prefix
   * @throws NullPointerException if {@code s} is null
   * @throws IllegalArgumentException if {@code maxChars} is negative
   */
  public static String prefixChars(String s, int maxChars) {
    if (s == null) {
      throw new NullPointerException("s");
    }
    if (maxChars < 0) {
      throw new IllegalArgumentException("maxChars must be >= 0, was " + maxChars);
    }
    if (s.length() <= maxChars) {
      return s;
    }
    int end = maxChars;
    if (end > 0 && Character.isHighSurrogate(s.charAt(end - 1))
        && Character.isLowSurrogate(s.charAt(end))) {
      end--;
    }
    return s.substring(0, end);
  }

}

package io.relaykit.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A list of strings packed into one string and back, the codec the stores share (the JDBC
 * envelope column, Redis journal and dead-letter fields): each element is its length in chars, a
 * colon and the chars ({@code 5:hello}); a null element, where allowed, is a single {@code -}.
 * Exact for any content (colons, newlines, unpaired surrogates: it counts chars, not bytes) and
 * O(total length) both ways. Not API: see the package comment.
 */
public final class LengthPrefixed {
  private LengthPrefixed() {}

  /**
   * Packs {@code values}; a null element is written as {@code -}.
   *
   * @param values the elements, nulls allowed; not null itself
   * @return the packed string (empty for no elements)
   * @throws NullPointerException if {@code values} is null
   */
  public static String encode(List<String> values) {
    StringBuilder sb = new StringBuilder(16 * values.size() + 16);
    for (String v : values) {
      if (v == null) {
        sb.append('-');
      } else {
        sb.append(v.length()).append(':').append(v);
      }
    }
    return sb.toString();
  }

  /**
   * {@link #encode(List)} of {@code values}, nulls allowed.
   *
   * @param values the elements
   * @return the packed string
   */
  public static String encode(String... values) {
    return encode(Arrays.asList(values));
  }

  /**
   * Unpacks what {@link #encode(List)} wrote.
   *
   * @param packed what {@link #encode(List)} wrote
   * @param nulls whether a {@code -} element (a null) is allowed; when not, it is an error
   * @return the elements, in order (a modifiable list)
   * @throws NullPointerException if {@code packed} is null
   * @throws IllegalArgumentException when {@code packed} is not such a list, with a message
   *     starting {@code "at offset <n>: "} and saying what is wrong there (no ':' after a length, a
   *     length that is not a number, a length that runs past the end, a null where none is
   *     allowed)
   */
  public static List<String> decode(String packed, boolean nulls) {
    List<String> out = new ArrayList<>();
    int i = 0;
    int n = packed.length();
    while (i < n) {
      if (packed.charAt(i) == '-') {
        if (!nulls) {
          throw corrupt(i, "a null element ('-') where none is allowed");
        }
        out.add(null);
        i++;
        continue;
      }
      int colon = packed.indexOf(':', i);
      if (colon < 0) {
        throw corrupt(i, "no ':' after a length");
      }
      int length;
      try {
        length = Integer.parseInt(packed, i, colon, 10);
      } catch (NumberFormatException e) {
        throw corrupt(i, "length '" + Texts.truncateChars(packed.substring(i, colon), 20)
            + "' is not a number");
      }
      long end = colon + 1L + length;
      if (length < 0 || end > n) {
        throw corrupt(i, "length " + length + " runs past the end (" + n + " characters)");
      }
      out.add(packed.substring(colon + 1, (int) end));
      i = (int) end;
    }
    return out;
  }

  private static IllegalArgumentException corrupt(int offset, String what) {
    return new IllegalArgumentException("at offset " + offset + ": " + what);
  }
}

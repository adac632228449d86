package io.relaykit.storage.redis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Packs a list of strings (nulls allowed) into one Redis value and back: each element is its length
 * in chars, a colon and the chars; a null is a single {@code -}. Exact for any content, including
 * colons and newlines, and O(total length) both ways.
 */
final class Fields {
  private Fields() {}

  static String encode(List<String> values) {
    StringBuilder sb = new StringBuilder();
    for (String v : values) {
      if (v == null) {
        sb.append('-');
      } else {
        sb.append(v.length()).append(':').append(v);
      }
    }
    return sb.toString();
  }

  static String encode(String... values) {
    List<String> list = new ArrayList<>(values.length);
    Collections.addAll(list, values);
    return encode(list);
  }

  /**
   * @throws IllegalArgumentException when {@code packed} was not written by {@link #encode}
   */
  static List<String> decode(String packed) {
    List<String> out = new ArrayList<>();
    int i = 0;
    while (i < packed.length()) {
      if (packed.charAt(i) == '-') {
        out.add(null);
        i++;
        continue;
      }
      int colon = packed.indexOf(':', i);
      if (colon <= i) {
        throw new IllegalArgumentException("not a packed field list at offset " + i);
      }
      int len;
      try {
        len = Integer.parseInt(packed, i, colon, 10);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("not a packed field list at offset " + i, e);
      }
      int end = colon + 1 + len;
      if (len < 0 || end > packed.length()) {
        throw new IllegalArgumentException("packed field list truncated at offset " + i);
      }
      out.add(packed.substring(colon + 1, end));
      i = end;
    }
    return out;
  }
}

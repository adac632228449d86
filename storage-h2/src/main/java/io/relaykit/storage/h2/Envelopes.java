package io.relaykit.storage.h2;

import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Stores a message's envelope as one text column: {@link MessageHeaders#toWire} (the wire mapping
 * every transport uses), each name and value written as {@code <length>:<text>}. Length-prefixed,
 * so any character survives without escaping; the key and payload have columns of their own.
 */
final class Envelopes {
  private Envelopes() {}

  static String encode(Message message) {
    StringBuilder sb = new StringBuilder(256);
    for (Map.Entry<String, String> h : MessageHeaders.toWire(message).entrySet()) {
      append(sb, h.getKey());
      append(sb, h.getValue());
    }
    return sb.toString();
  }

  /**
   * @throws MalformedMessageException naming what is wrong: a corrupt column (with the offset), a
   *     missing or invalid envelope header, an invalid key or payload
   */
  static Message decode(String encoded, String key, byte[] payload) {
    return MessageHeaders.fromWire(decodeMap(encoded), key, payload);
  }

  /** @throws MalformedMessageException if the column is not a sequence of length-prefixed texts */
  static Map<String, String> decodeMap(String encoded) {
    if (encoded == null) {
      throw new MalformedMessageException("envelope column is NULL");
    }
    Map<String, String> map = new LinkedHashMap<>();
    int[] pos = {0};
    while (pos[0] < encoded.length()) {
      String name = next(encoded, pos);
      String value = next(encoded, pos);
      map.put(name, value);
    }
    return map;
  }

  private static void append(StringBuilder sb, String s) {
    sb.append(s.length()).append(':').append(s);
  }

  private static String next(String encoded, int[] pos) {
    int colon = encoded.indexOf(':', pos[0]);
    if (colon < 0) {
      throw corrupt(pos[0], "no ':' after a length");
    }
    int length;
    try {
      length = Integer.parseInt(encoded, pos[0], colon, 10);
    } catch (NumberFormatException e) {
      throw corrupt(pos[0], "length '" + abbreviate(encoded.substring(pos[0], colon))
          + "' is not a number");
    }
    long end = colon + 1L + length;
    if (length < 0 || end > encoded.length()) {
      throw corrupt(pos[0], "length " + length + " runs past the end of the column ("
          + encoded.length() + " characters)");
    }
    pos[0] = (int) end;
    return encoded.substring(colon + 1, (int) end);
  }

  private static MalformedMessageException corrupt(int offset, String what) {
    return new MalformedMessageException("corrupt envelope column at offset " + offset + ": "
        + what);
  }

  private static String abbreviate(String s) {
    return s.length() <= 20 ? s : s.substring(0, 20) + "...";
  }
}

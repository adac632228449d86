package io.relaykit.storage.h2;

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

  static Message decode(String encoded, String key, byte[] payload) {
    return MessageHeaders.fromWire(decodeMap(encoded), key, payload);
  }

  static Map<String, String> decodeMap(String encoded) {
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
      throw new IllegalStateException("corrupt envelope column at offset " + pos[0]);
    }
    int length = Integer.parseInt(encoded, pos[0], colon, 10);
    int end = colon + 1 + length;
    if (length < 0 || end > encoded.length()) {
      throw new IllegalStateException("corrupt envelope column at offset " + pos[0]);
    }
    pos[0] = end;
    return encoded.substring(colon + 1, end);
  }
}

package io.relaykit.storage.jdbc;

import io.relaykit.internal.LengthPrefixed;
import io.relaykit.internal.Texts;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Stores a message's envelope as one text column: {@link MessageHeaders#toWire} (the wire mapping
 * every transport uses), each name and value written as {@code <length>:<text>}. Length-prefixed,
 * so any character survives without escaping; the key and payload have columns of their own.
 */
final class Envelopes {
  private Envelopes() {}

  static String encode(Message message) {
    List<String> fields = new ArrayList<>();
    for (Map.Entry<String, String> h : MessageHeaders.toWire(message).entrySet()) {
      fields.add(h.getKey());
      fields.add(h.getValue());
    }
    return LengthPrefixed.encode(fields);
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
    List<String> fields;
    try {
      fields = LengthPrefixed.decode(encoded, false);
    } catch (IllegalArgumentException e) {
      throw new MalformedMessageException("corrupt envelope column " + e.getMessage(), e);
    }
    if (fields.size() % 2 != 0) {
      throw new MalformedMessageException("corrupt envelope column at offset "
          + encoded.length() + ": header " + Texts.truncateChars(fields.get(fields.size() - 1), 20)
          + " has no value");
    }
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i < fields.size(); i += 2) {
      map.put(fields.get(i), fields.get(i + 1));
    }
    return map;
  }
}

package io.relaykit.transport.kafka;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** Record header codec: relaykit's string headers as UTF-8 Kafka headers, and back. */
final class KafkaRecords {
  private KafkaRecords() {}

  static Headers toHeaders(Map<String, String> wire) {
    RecordHeaders headers = new RecordHeaders();
    for (Map.Entry<String, String> h : wire.entrySet()) {
      headers.add(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8));
    }
    return headers;
  }

  /** The last value of each header name, decoded as UTF-8; a header with a null value is skipped. */
  static Map<String, String> fromHeaders(Headers headers) {
    Map<String, String> wire = new LinkedHashMap<>();
    for (Header h : headers) {
      if (h.value() != null) {
        wire.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
      }
    }
    return wire;
  }

  /** Bytes a record's key, value and headers take, before Kafka's own framing. */
  static int payloadBytes(String key, byte[] value, Headers headers) {
    long size = value == null ? 0 : value.length;
    if (key != null) {
      size += utf8Length(key);
    }
    for (Header h : headers) {
      size += utf8Length(h.key()) + (h.value() == null ? 0 : h.value().length);
    }
    return (int) Math.min(Integer.MAX_VALUE, size);
  }

  /** {@code s.getBytes(UTF_8).length}, without encoding it. */
  static long utf8Length(String s) {
    long n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (!Character.isSurrogate(c)) {
        n += 3;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n++; // a lone surrogate is encoded as '?'
      }
    }
    return n;
  }

  /** The {@code topic-partition} part of a {@link #position}, or null if it is not one. */
  static String partitionOf(String position) {
    int at = position.lastIndexOf('@');
    return at > 0 && position.lastIndexOf('-', at) > 0 ? position.substring(0, at) : null;
  }

  /** {@code topic-partition@offset}, the position format of receipts and dead letters. */
  static String position(String topic, int partition, long offset) {
    return topic + "-" + partition + "@" + offset;
  }
}

package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import io.relaykit.internal.Digests;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.MessageHeaders;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The AMQP side of {@link io.relaykit.message.MessageHeaders}: every relaykit header travels as an
 * AMQP string header, and the message id, type and creation time are mirrored into the standard
 * AMQP properties for tools that show them (an id or type longer than a short string's 255 UTF-8
 * bytes is not mirrored). Messages are always persistent.
 */
final class AmqpHeaders {
  /** The publish sequence number, so a returned (unroutable) message finds its pending publish. */
  static final String PUBLISH_SEQ = "relaykit-publish-seq";
  /**
   * The message key. AMQP has no key property, and the routing key is the queue name once a
   * message moves through the default exchange to a delay or dead-letter queue, so the key also
   * travels as a header.
   */
  static final String KEY = "relaykit-key";
  /**
   * The order of the user headers, names joined by newlines: amqp-client decodes a header table
   * into a HashMap, and the envelope promises insertion order.
   */
  static final String HEADER_ORDER = "relaykit-header-order";
  /** Distinguishes two dead-letter queue entries of the same message id. */
  static final String DEAD_ENTRY = "relaykit-dead-entry";

  private static final int PERSISTENT = 2;

  private AmqpHeaders() {}

  static AMQP.BasicProperties properties(String messageId, String type, long createdAtMillis,
      Map<String, String> wire, long publishSeq) {
    Map<String, Object> headers = new LinkedHashMap<>(wire);
    headers.put(PUBLISH_SEQ, Long.toString(publishSeq));
    StringBuilder order = new StringBuilder();
    int users = 0;
    for (String name : wire.keySet()) {
      if (!MessageHeaders.isReserved(name)) {
        if (name.indexOf('\n') >= 0) {
          users = 0;
          break;
        }
        order.append(users++ == 0 ? "" : "\n").append(name);
      }
    }
    if (users > 1) {
      headers.put(HEADER_ORDER, order.toString());
    } else {
      headers.remove(HEADER_ORDER);
    }
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(PERSISTENT)
        .contentType(wire.getOrDefault(io.relaykit.message.CloudEvents.CONTENT_TYPE,
            "application/octet-stream"))
        .messageId(shortString(messageId))
        .type(shortString(type))
        .timestamp(new java.util.Date(createdAtMillis))
        .headers(headers)
        .build();
  }

  /** The most UTF-8 bytes of an AMQP 0-9-1 short string (a property, a routing key). */
  static final int MAX_SHORT_STRING_BYTES = 255;

  /**
   * {@code s} if it fits a short-string property, else null: the message id and type are
   * mirrored into the properties only for tools that show them (relaykit reads its headers), and
   * a longer one would fail every write of the message (amqp-client refuses to encode it).
   */
  private static String shortString(String s) {
    return s == null || utf8Length(s) <= MAX_SHORT_STRING_BYTES ? s : null;
  }

  /** The UTF-8 length of {@code s} (well-formed; an unpaired surrogate counts as '?'). */
  static int utf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else if (Character.isSurrogate(c)) {
        n++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /**
   * The string headers of a delivery, without the transport-private ones; user headers in the
   * order they were published.
   *
   * @throws MalformedMessageException if a header is not a string, number or boolean, or a long
   *     string that is not valid UTF-8
   */
  static Map<String, String> strings(AMQP.BasicProperties props) {
    Map<String, String> out = new LinkedHashMap<>();
    Map<String, Object> raw = props.getHeaders();
    if (raw == null) {
      return out;
    }
    Map<String, Object> headers = new LinkedHashMap<>();
    Object order = raw.get(HEADER_ORDER);
    if (order != null) {
      for (String name : string(order).split("\n")) {
        if (raw.containsKey(name)) {
          headers.put(name, raw.get(name));
        }
      }
    }
    raw.forEach(headers::putIfAbsent);
    for (Map.Entry<String, Object> h : headers.entrySet()) {
      if (h.getKey().equals(PUBLISH_SEQ) || isBrokerHeader(h.getKey())) {
        continue;
      }
      Object v = h.getValue();
      if (v instanceof LongString) {
        String text = utf8(((LongString) v).getBytes());
        if (text == null) {
          // Read leniently, two different byte strings would become one text (U+FFFD).
          throw new MalformedMessageException("header " + h.getKey() + " is not valid UTF-8");
        }
        out.put(h.getKey(), text);
      } else if (v instanceof String || v instanceof Number || v instanceof Boolean) {
        out.put(h.getKey(), String.valueOf(v));
      } else if (v == null) {
        throw new MalformedMessageException("header " + h.getKey() + " is null");
      } else {
        throw new MalformedMessageException("header " + h.getKey() + " is not a string but a "
            + v.getClass().getSimpleName());
      }
    }
    return out;
  }

  /**
   * As {@link #strings}, for a subscription that accepts foreign messages: a header that is not a
   * string, number or boolean (a table, an array, a timestamp, bytes), or a long string that is
   * not valid UTF-8, is left out and its name added to {@code invalid} instead of failing the
   * message.
   */
  static Map<String, String> stringsLenient(AMQP.BasicProperties props, Set<String> invalid) {
    Map<String, String> out = new LinkedHashMap<>();
    Map<String, Object> raw = props.getHeaders();
    if (raw == null) {
      return out;
    }
    if (raw.containsKey(HEADER_ORDER) || isUtf8Text(raw.get(MessageHeaders.ID))) {
      // relaykit's own envelope: read strictly (a header of the wrong type is undecodable, as
      // with a relaykit-only mapping, whatever the number of user headers), in its order.
      return strings(props);
    }
    for (Map.Entry<String, Object> h : raw.entrySet()) {
      if (h.getKey().equals(PUBLISH_SEQ) || isBrokerHeader(h.getKey())) {
        continue;
      }
      Object v = h.getValue();
      if (v instanceof LongString) {
        String text = utf8(((LongString) v).getBytes());
        if (text == null) {
          invalid.add(h.getKey());
        } else {
          out.put(h.getKey(), text);
        }
      } else if (v instanceof String || v instanceof Number || v instanceof Boolean) {
        out.put(h.getKey(), String.valueOf(v));
      } else {
        invalid.add(h.getKey());
      }
    }
    return out;
  }

  /** {@code bytes} as UTF-8 text, or null when they are not valid UTF-8. */
  private static String utf8(byte[] bytes) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  /**
   * A foreign message's position, the same on every redelivery: its message-id property if it has
   * one, else {@code destination@sha256:} and 32 hex digits of a SHA-256 over the timestamp, the
   * string headers (sorted; broker-added ones excluded, they change on redelivery) and the body,
   * the same in every group. No choice of header names, values and body makes two different
   * messages one digest input: headers whose names hold no '=', newline or NUL and whose values
   * hold no newline or NUL are joined as {@code \nname=value}, then a NUL and the body; any other
   * message's parts go in with their lengths first, behind a byte that form never starts with,
   * and so do the bytes of long-string headers that are not UTF-8 (left out of {@code wire}).
   * Delivery tags are per channel and redelivery, so they
   * cannot serve.
   */
  static String stablePosition(String destination, AMQP.BasicProperties props, Map<String, String> wire,
      byte[] body) {
    if (props.getMessageId() != null && !props.getMessageId().isBlank()) {
      return props.getMessageId();
    }
    MessageDigest sha = Digests.sha256();
    byte[] stamp = String.valueOf(props.getTimestamp() == null ? ""
        : props.getTimestamp().getTime()).getBytes(StandardCharsets.UTF_8);
    Map<String, String> sorted = new TreeMap<>(wire);
    // Long strings that are not UTF-8 are left out of wire: their bytes count here, so two
    // messages that differ only in one (a binary id header) never share a position.
    Map<String, byte[]> binary = new TreeMap<>();
    if (props.getHeaders() != null) {
      props.getHeaders().forEach((k, v) -> {
        if (v instanceof LongString && !k.equals(PUBLISH_SEQ) && !isBrokerHeader(k)
            && !wire.containsKey(k) && utf8(((LongString) v).getBytes()) == null) {
          binary.put(k, ((LongString) v).getBytes());
        }
      });
    }
    boolean delimited = binary.isEmpty();
    for (Map.Entry<String, String> h : sorted.entrySet()) {
      delimited &= none(h.getKey(), "=\n\0") && none(h.getValue(), "\n\0");
    }
    if (delimited) {
      // Unambiguous without lengths when no name holds '=', newline or NUL and no value a newline
      // or NUL; kept for these so that the ids of such messages stay what they were.
      sha.update(stamp);
      for (Map.Entry<String, String> h : sorted.entrySet()) {
        sha.update(("\n" + h.getKey() + "=" + h.getValue()).getBytes(StandardCharsets.UTF_8));
      }
      sha.update((byte) 0);
      if (body != null) {
        sha.update(body);
      }
    } else {
      // Length-prefixed, behind a first byte (0xFF) that the form above never starts with.
      sha.update((byte) 0xFF);
      part(sha, stamp);
      part(sha, Integer.toString(sorted.size()).getBytes(StandardCharsets.UTF_8));
      for (Map.Entry<String, String> h : sorted.entrySet()) {
        part(sha, h.getKey().getBytes(StandardCharsets.UTF_8));
        part(sha, h.getValue().getBytes(StandardCharsets.UTF_8));
      }
      part(sha, Integer.toString(binary.size()).getBytes(StandardCharsets.UTF_8));
      for (Map.Entry<String, byte[]> h : binary.entrySet()) {
        part(sha, h.getKey().getBytes(StandardCharsets.UTF_8));
        part(sha, h.getValue());
      }
      part(sha, body == null ? new byte[0] : body);
    }
    return destination + "@sha256:" + Digests.hex(sha.digest(), 16);
  }

  /** Whether {@code s} holds none of the characters of {@code chars}. */
  private static boolean none(String s, String chars) {
    for (int i = 0; i < chars.length(); i++) {
      if (s.indexOf(chars.charAt(i)) >= 0) {
        return false;
      }
    }
    return true;
  }

  /** Adds {@code bytes} to {@code sha} behind their length (4 bytes, big-endian). */
  private static void part(MessageDigest sha, byte[] bytes) {
    sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
    sha.update(bytes);
  }

  /**
   * A foreign message's key: the routing key, unless it came through the default exchange, where
   * the routing key is only the queue's name and says nothing about ordering.
   */
  static String foreignKey(Envelope envelope) {
    String exchange = envelope.getExchange();
    String routingKey = envelope.getRoutingKey();
    return exchange == null || exchange.isEmpty() || routingKey == null || routingKey.isBlank()
        ? null : routingKey;
  }

  /**
   * The key a foreign message had before RabbitMQ dead-lettered it: the first routing key of its
   * oldest x-death record when it came through an exchange other than the default one (as {@link
   * #foreignKey}); null when absent or not of the expected shape (a header from the wire is bad
   * input: never an exception).
   */
  static String deadLetteredKey(AMQP.BasicProperties props) {
    Map<String, Object> h = props.getHeaders();
    Object deaths = h == null ? null : h.get("x-death");
    if (!(deaths instanceof java.util.List<?> list) || list.isEmpty()) {
      return null;
    }
    Object oldest = list.get(list.size() - 1);
    if (!(oldest instanceof Map<?, ?> death)) {
      return null;
    }
    Object exchange = death.get("exchange");
    Object keys = death.get("routing-keys");
    if (!isText(exchange) || string(exchange).isEmpty() || !(keys instanceof java.util.List<?> ks)
        || ks.isEmpty() || !isText(ks.get(0))) {
      return null;
    }
    String key = string(ks.get(0));
    return key.isBlank() || key.length() > 1024 ? null : key;
  }

  /** Whether {@code v} is an AMQP string that is valid UTF-8: an envelope's id. */
  private static boolean isUtf8Text(Object v) {
    return v instanceof String
        || v instanceof LongString && utf8(((LongString) v).getBytes()) != null;
  }

  /** Whether {@code v} is an AMQP string (a long string or a decoded one). */
  private static boolean isText(Object v) {
    return v instanceof LongString || v instanceof String;
  }

  /** A header value as text; AMQP long strings are UTF-8 bytes. */
  static String string(Object v) {
    return v instanceof LongString
        ? new String(((LongString) v).getBytes(), StandardCharsets.UTF_8) : String.valueOf(v);
  }

  /**
   * Headers the broker adds on redelivery, dead-lettering, federation and shovelling (tables,
   * arrays and timestamps among them); not part of the message.
   */
  static boolean isBrokerHeader(String name) {
    return name.equals("x-delivery-count") || name.equals("x-death")
        || name.startsWith("x-first-death-") || name.startsWith("x-last-death-")
        || name.equals("x-received-from") || name.equals("x-shovelled")
        || name.equals("x-shovelled-timestamp");
  }

  /** Estimated encoded size of headers: names, values and a few bytes of framing each. */
  static long estimatedSize(Map<String, String> wire) {
    long size = 64;
    for (Map.Entry<String, String> h : wire.entrySet()) {
      size += 8 + h.getKey().length() + (long) h.getValue().length() * 3;
    }
    return size;
  }
}

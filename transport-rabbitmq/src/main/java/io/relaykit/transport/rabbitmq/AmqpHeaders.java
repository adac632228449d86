package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.MessageHeaders;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The AMQP side of {@link io.relaykit.message.MessageHeaders}: every relaykit header travels as an
 * AMQP string header, and the message id, type and creation time are mirrored into the standard
 * AMQP properties for tools that show them. Messages are always persistent.
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
        .contentType("application/octet-stream")
        .messageId(messageId)
        .type(type)
        .timestamp(new java.util.Date(createdAtMillis))
        .headers(headers)
        .build();
  }

  /**
   * The string headers of a delivery, without the transport-private ones; user headers in the
   * order they were published.
   *
   * @throws MalformedMessageException if a header is not a string or number
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
      if (v instanceof LongString || v instanceof String || v instanceof Number
          || v instanceof Boolean) {
        out.put(h.getKey(), string(v));
      } else if (v == null) {
        throw new MalformedMessageException("header " + h.getKey() + " is null");
      } else {
        throw new MalformedMessageException("header " + h.getKey() + " is not a string but a "
            + v.getClass().getSimpleName());
      }
    }
    return out;
  }

  /** A header value as text; AMQP long strings are UTF-8 bytes. */
  static String string(Object v) {
    return v instanceof LongString
        ? new String(((LongString) v).getBytes(), StandardCharsets.UTF_8) : String.valueOf(v);
  }

  /** Headers the broker adds on redelivery and dead-lettering; not part of the message. */
  static boolean isBrokerHeader(String name) {
    return name.equals("x-delivery-count") || name.equals("x-death")
        || name.startsWith("x-first-death-") || name.startsWith("x-last-death-")
        || name.equals("x-received-from");
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

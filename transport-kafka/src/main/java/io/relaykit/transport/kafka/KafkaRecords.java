package io.relaykit.transport.kafka;

import io.relaykit.internal.Utf8;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.MalformedMessageException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
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

  /**
   * The last value of header {@code name} as UTF-8, or null when absent, null or not valid UTF-8:
   * the value {@link #fromHeadersStrict} (and so {@link #read}) gives it, so that what orders a
   * record before it is decoded reads the headers its decoder reads.
   */
  static String header(Headers headers, String name) {
    Header h = headers.lastHeader(name);
    if (h == null || h.value() == null) {
      return null;
    }
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(h.value())).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      return null; // the decoder leaves it out too
    }
  }

  /**
   * As {@link #fromHeaders(Headers)}, but a value that is not valid UTF-8 is left out and its name
   * added to {@code invalid}, so a foreign record's binary header is reported rather than turned
   * into replacement characters.
   */
  static Map<String, String> fromHeadersStrict(Headers headers, java.util.Set<String> invalid) {
    Map<String, String> wire = new LinkedHashMap<>();
    for (Header h : headers) {
      if (h.value() == null) {
        continue;
      }
      try {
        wire.put(h.key(), StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
            .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
            .decode(java.nio.ByteBuffer.wrap(h.value())).toString());
        invalid.remove(h.key());
      } catch (java.nio.charset.CharacterCodingException e) {
        wire.remove(h.key());
        invalid.add(h.key());
      }
    }
    return wire;
  }

  /**
   * A received record read through a subscription's inbound mapping: either {@code decoded}, or
   * {@code malformed} with the headers as they arrived ({@code wire}, which the undecodable
   * record's dead-letter copy carries).
   */
  record Read(Map<String, String> wire, InboundMapping.Decoded decoded,
      MalformedMessageException malformed) {}

  /**
   * The one decode step of the consumer-group and share-group runtimes: headers as UTF-8 (strict,
   * with the invalid ones reported, when {@code inbound} accepts foreign records), then {@link
   * InboundMapping#decode}. Never throws for a bad record: a record that cannot be decoded comes
   * back as {@link Read#malformed}.
   */
  static Read read(ConsumerRecord<String, byte[]> r, InboundMapping inbound, String topic,
      String position, Instant now) {
    Set<String> invalid = inbound.acceptsForeign() ? new HashSet<>() : Set.of();
    Map<String, String> wire = inbound.acceptsForeign()
        ? fromHeadersStrict(r.headers(), invalid)
        : fromHeaders(r.headers());
    try {
      return new Read(wire, inbound.decode(wire, r.value(), new InboundMapping.Inbound(topic,
          position, r.key(), r.timestamp() >= 0 ? Instant.ofEpochMilli(r.timestamp()) : null,
          now, invalid, InboundMapping.KAFKA_CLOUDEVENTS_PREFIX)), null);
    } catch (MalformedMessageException e) {
      return new Read(wire, null, e);
    }
  }

  /** Bytes a record's key, value and headers take, before Kafka's own framing. */
  static int payloadBytes(String key, byte[] value, Headers headers) {
    long size = value == null ? 0 : value.length;
    if (key != null) {
      size += Utf8.length(key);
    }
    for (Header h : headers) {
      size += Utf8.length(h.key()) + (h.value() == null ? 0 : h.value().length);
    }
    return (int) Math.min(Integer.MAX_VALUE, size);
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

  /**
   * The partition and offset of a {@link #position}, or null if {@code position} is not one.
   *
   * @return {@code [topic, partition, offset]} as a partition and an offset
   */
  static java.util.Map.Entry<org.apache.kafka.common.TopicPartition, Long> parsePosition(
      String position) {
    if (position == null) {
      return null;
    }
    int at = position.lastIndexOf('@');
    int dash = at > 0 ? position.lastIndexOf('-', at) : -1;
    if (dash <= 0) {
      return null;
    }
    try {
      int partition = Integer.parseInt(position.substring(dash + 1, at));
      long offset = Long.parseLong(position.substring(at + 1));
      if (partition < 0 || offset < 0) {
        return null;
      }
      return java.util.Map.entry(new org.apache.kafka.common.TopicPartition(
          position.substring(0, dash), partition), offset);
    } catch (NumberFormatException e) {
      return null;
    }
  }
}

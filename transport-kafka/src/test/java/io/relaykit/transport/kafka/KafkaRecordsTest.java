package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaRecords header codec and sizes")
class KafkaRecordsTest {

  @Test
  @DisplayName("utf8Length is the length of the UTF-8 encoding, surrogate pairs and lone"
      + " surrogates included")
  void utf8Length() {
    for (String s : List.of("", "order-42", "caf\u00e9", "\u00ff\u0100\u07ff\u0800",
        "\u65e5\u672c\u8a9e", "\ud83d\ude00 smile", "lone \ud83d high", "lone \ude00 low",
        "\ude00\ud83d reversed", "end \ud83d", "\uffff\u0000")) {
      assertThat(KafkaRecords.utf8Length(s)).as(s)
          .isEqualTo(s.getBytes(StandardCharsets.UTF_8).length);
    }
  }

  @Test
  @DisplayName("payloadBytes counts the key, the value and every header name and value")
  void payloadBytes() {
    Map<String, String> wire = new LinkedHashMap<>();
    wire.put("relaykit-id", "m-1");
    wire.put("t\u00e9nant", "\u65e5\u672c");
    RecordHeaders headers = (RecordHeaders) KafkaRecords.toHeaders(wire);
    headers.add("empty", null);
    // key 5 + value 10 + "relaykit-id" 11 + "m-1" 3 + "ténant" 7 + "日本" 6 + "empty" 5
    assertThat(KafkaRecords.payloadBytes("order", new byte[10], headers)).isEqualTo(47);
    assertThat(KafkaRecords.payloadBytes(null, null, new RecordHeaders())).isZero();
  }
}

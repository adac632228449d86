package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaRecords header codec and sizes")
class KafkaRecordsTest {

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

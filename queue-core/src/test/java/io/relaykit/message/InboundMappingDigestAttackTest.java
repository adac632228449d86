package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("InboundMapping: no part of a derived value can forge another")
class InboundMappingDigestAttackTest {

  private static final Instant NOW = Instant.parse("2026-12-06T12:00:00Z");

  @Test
  @DisplayName("a derived trace id of a destination with a newline never equals another pair's")
  void traceIdPartsDoNotRunTogether() {
    assertThat(InboundMapping.traceIdOf("a\nb", "c"))
        .isNotEqualTo(InboundMapping.traceIdOf("a", "b\nc"));
    assertThat(InboundMapping.traceIdOf("a\nb", "c"))
        .isNotEqualTo(InboundMapping.traceIdOf("a\nb\nc", ""));
    // unchanged for every destination without a newline
    assertThat(InboundMapping.traceIdOf("orders", "e-1"))
        .isEqualTo("fd20b78dfcdf80194a4e10d7dcabc5d8");
  }

  @Test
  @DisplayName("a relaykit id header the transport could not read as UTF-8 is undecodable, not a"
      + " foreign record with a derived id")
  void invalidIdHeaderIsUndecodable() {
    Map<String, String> wire = Map.of(MessageHeaders.TYPE, "t");
    InboundMapping.Inbound in = new InboundMapping.Inbound("orders", "orders@1", null, null, NOW,
        Set.of(MessageHeaders.ID), null);
    for (InboundMapping m : new InboundMapping[] {InboundMapping.standard(),
        InboundMapping.relaykitOnly()}) {
      assertThatThrownBy(() -> m.decode(wire, "p".getBytes(StandardCharsets.UTF_8), in))
          .isInstanceOf(MalformedMessageException.class)
          .hasMessageContaining(MessageHeaders.ID).hasMessageContaining("UTF-8");
    }
  }
}

package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("InboundMapping: no part of a derived value can forge another")
class InboundMappingDigestAttackTest {

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
}

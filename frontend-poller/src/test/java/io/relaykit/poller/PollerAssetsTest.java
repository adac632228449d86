package io.relaykit.poller;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class PollerAssetsTest {
  @Test
  @DisplayName("the browser poller ships in the jar (its behaviour: BrowserPollerTest)")
  void script() {
    String script = new String(PollerAssets.browserPollerScript(), StandardCharsets.UTF_8);
    assertThat(script).contains("global.RelayKitPoller = { poll: poll, pollAfter: pollAfter");
  }
}

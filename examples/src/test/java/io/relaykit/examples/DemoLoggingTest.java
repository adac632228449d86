package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * README's logging promises, on the demo as a user runs it: relaykit's {@link System.Logger} lines
 * reach SLF4J through the JDK platform logging bridge (slf4j-jdk-platform-logging, with
 * slf4j-simple as the backend here), and no payload reaches a log line — not at DEBUG either —
 * while orders are retried, succeed and are dead-lettered.
 */
class DemoLoggingTest {
  private static final Duration WAIT = Duration.ofSeconds(90);

  @TempDir
  Path data;

  @Test
  @DisplayName("relaykit logs through SLF4J, and payloads never reach the log at DEBUG while orders"
      + " are retried, succeed and are dead-lettered")
  void logsThroughSlf4jWithoutPayloads() throws Exception {
    String marker = "PAYLOAD" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    Map<String, String> env = Map.of(
        // slf4j-simple's level for relaykit's loggers: debug, so the test sees more than a user
        // would by default.
        "JAVA_TOOL_OPTIONS", "-Dorg.slf4j.simpleLogger.log.io.relaykit=debug");
    List<String> ids = new ArrayList<>();
    String output;
    try (DemoProcess demo = DemoProcess.start(env, "--data", data.toString(), "--transport",
        "memory", "--fail-rate", "0.5", "--poison-sku", "POISON")) {
      for (int i = 0; i < 6; i++) {
        DemoHttp.Answer a = demo.http.order(DemoHttp.newKey(), marker + "-" + i, 1);
        assertThat(a.status()).as("order %d accepted", i).isEqualTo(202);
        ids.add(a.json().get("orderId").asText());
      }
      DemoHttp.Answer poison = demo.http.order(DemoHttp.newKey(), "POISON", 1);
      assertThat(poison.status()).isEqualTo(202);
      for (String id : ids) {
        demo.http.awaitStatus(id, "SUCCESS", WAIT);
      }
      demo.http.awaitStatus(poison.json().get("orderId").asText(), "FAILED", WAIT);
      demo.stop();
      output = demo.outputAtExit();
      assertThat(demo.outputCut()).as("the demo printed more than the test keeps").isFalse();
    }

    // The demo's start line in slf4j-simple's layout ("[thread] LEVEL logger - message"), not in
    // java.util.logging's: System.Logger went through the bridge.
    assertThat(output).containsPattern(
        "\\] DEBUG io\\.relaykit\\.examples\\.CheckoutApp - outbox relay and \\d+ consumers"
        + " started");
    assertThat(output).doesNotContain(marker);
  }
}

package io.relaykit.poller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class StatusResponsesTest {

  private final StatusResponses responses = new StatusResponses("orderId");

  @Test
  @DisplayName("submit answers 202 with the status URL, Retry-After and a PENDING body")
  void accepted() {
    HttpAnswer answer = responses.accepted("o-1", URI.create("/orders/o-1/status"),
        Duration.ofMillis(1500));

    assertThat(answer.status()).isEqualTo(202);
    assertThat(answer.headers()).containsEntry("Location", "/orders/o-1/status")
        .containsEntry("Retry-After", "2");
    assertThat(StatusDocument.parse(answer.body(), "orderId"))
        .isEqualTo(new StatusDocument("o-1", JobStatus.PENDING, null, null));
  }

  @Test
  @DisplayName("a running job's status carries Retry-After; a finished one does not")
  void status() {
    Instant at = Instant.parse("2026-01-01T00:00:00Z");
    HttpAnswer running = responses.status(
        new StatusDocument("o-1", JobStatus.PROCESSING, at, null), Duration.ofSeconds(1));
    HttpAnswer failed = responses.status(
        new StatusDocument("o-1", JobStatus.FAILED, at, "poison sku"), Duration.ofSeconds(1));

    assertThat(running.status()).isEqualTo(200);
    assertThat(running.headers()).containsEntry("Retry-After", "1");
    assertThat(failed.headers()).doesNotContainKey("Retry-After");
    assertThat(StatusDocument.parse(failed.body(), "orderId"))
        .isEqualTo(new StatusDocument("o-1", JobStatus.FAILED, at, "poison sku"));
  }

  @Test
  @DisplayName("bad input is rejected naming the problem")
  void badInput() {
    assertThatThrownBy(() -> new StatusResponses(""))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("idField");
    assertThatThrownBy(() -> responses.accepted(" ", URI.create("/x"), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("id");
    assertThatThrownBy(() -> responses.accepted("o", URI.create("/x"), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryAfter");
    assertThatThrownBy(() -> responses.error(200, "x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4xx or 5xx");
    assertThatThrownBy(() -> StatusDocument.parse("not json", "orderId"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not JSON");
    assertThatThrownBy(() -> StatusDocument.parse("{\"x\":1}", "orderId"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("\"status\"");
    assertThatThrownBy(() -> StatusDocument.parse("{\"status\":\"PENDING\",\"updatedAt\":\"y\"}",
        "orderId")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("updatedAt");
  }
}

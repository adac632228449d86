package io.relaykit.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.bench.LatencyBenchmark.Backend;
import io.relaykit.bench.LatencyBenchmark.Row;
import io.relaykit.bench.LatencyBenchmark.Wake;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("commit-to-handler latency benchmark")
class LatencyBenchmarkTest {

  @Nested
  @DisplayName("selection, as JMH args select")
  class Selection {

    @Test
    @DisplayName("without args: every backend at 200 and 2 000/s, 3 relays only on PostgreSQL, polling and woken")
    void defaults() {
      List<Row> rows = LatencyBenchmark.select();

      assertThat(rows).hasSize(20);
      assertThat(rows).filteredOn(r -> r.wake() == Wake.POLL).hasSize(10);
      assertThat(rows).filteredOn(r -> r.wake() == Wake.WAKE).hasSize(10);
      assertThat(rows).filteredOn(r -> r.backend() == Backend.H2_INPROCESS)
          .extracting(Row::relays).containsOnly(1);
      assertThat(rows).filteredOn(r -> r.backend() == Backend.POSTGRES_KAFKA)
          .filteredOn(r -> r.wake() == Wake.WAKE)
          .extracting(Row::rate, Row::relays)
          .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(200, 1),
              org.assertj.core.groups.Tuple.tuple(200, 3),
              org.assertj.core.groups.Tuple.tuple(2_000, 1),
              org.assertj.core.groups.Tuple.tuple(2_000, 3));
    }

    @Test
    @DisplayName("include regexps, -e and -p narrow the rows; relays above 1 skip H2")
    void filters() {
      assertThat(LatencyBenchmark.select("ReportQueueBenchmark")).isEmpty();
      assertThat(LatencyBenchmark.select("Latency", "-e", "postgres"))
          .extracting(Row::backend).containsOnly(Backend.H2_INPROCESS);
      assertThat(LatencyBenchmark.select("postgresKafka", "-p", "rate=500", "-p", "relays=3",
          "-p", "wake=WAKE")).containsExactly(new Row(Backend.POSTGRES_KAFKA, 500, 3, Wake.WAKE));
      assertThat(LatencyBenchmark.select("-p", "relays=3"))
          .noneMatch(r -> r.backend() == Backend.H2_INPROCESS);
      // Other JMH options are accepted and ignored.
      assertThat(LatencyBenchmark.select("-f", "1", "-wi", "2", "h2InProcess")).hasSize(4);
    }

    @Test
    @DisplayName("a wake or rate that does not exist is refused, naming it")
    void badParams() {
      assertThatThrownBy(() -> LatencyBenchmark.select("-p", "wake=SOON"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("wake=SOON")
          .hasMessageContaining("POLL");
      assertThatThrownBy(() -> LatencyBenchmark.select("-p", "rate=0"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rate=0");
    }

    @Test
    @DisplayName("the listing reads as JMH's -lp, so the report holds every row to a result")
    void listing() {
      String lp = LatencyBenchmark.listing(LatencyBenchmark.select("postgresKafka|h2"));

      assertThat(Report.parseSelected(lp)).isEqualTo(Map.of(
          "LatencyBenchmark.h2InProcess",
          Map.of("rate", List.of("200", "2000"), "relays", List.of("1"), "wake", List.of("POLL", "WAKE")),
          "LatencyBenchmark.postgresKafka",
          Map.of("rate", List.of("200", "2000"), "relays", List.of("1", "3"),
              "wake", List.of("POLL", "WAKE"))));
    }
  }

  @Test
  @DisplayName("H2 + in-process for two seconds gives every percentile, the report reads them,"
      + " and the profile splits the time into stages")
  void smoke() throws Exception {
    Row row = new Row(Backend.H2_INPROCESS, 200, 1, Wake.WAKE);
    java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();

    LatencyBenchmark.Result r = LatencyRun.run(row, Duration.ofMillis(500), Duration.ofSeconds(2),
        true, new java.io.PrintStream(log, true, java.nio.charset.StandardCharsets.UTF_8));

    String profile = log.toString(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(profile).contains("commit → claim start", "claim statement",
        "publish → broker confirm", "publish → handler", "confirm → markSent returned",
        "due → handler (total)");
    // Every measured message was claimed, so the relay made at least one claim with rows.
    assertThat(profile).containsPattern("claims [1-9][0-9]* \\(")
        .containsPattern("rows per claim p50 [1-9]");

    // Every measured message reached the handler; no speed is asserted.
    assertThat(r.messages()).isEqualTo(400);
    assertThat(r.p50()).isPositive();
    assertThat(r.p50()).isLessThanOrEqualTo(r.p99());
    assertThat(r.p99()).isLessThanOrEqualTo(r.p999());
    assertThat(r.p999()).isLessThanOrEqualTo(r.max());
    assertThat(r.commitP99()).isNotNegative();

    List<Report.Result> read = Report.read(LatencyBenchmark.json(List.of(r)));
    assertThat(read).singleElement().satisfies(result -> {
      assertThat(result.benchmark()).isEqualTo("LatencyBenchmark.h2InProcess");
      assertThat(result.params()).containsEntry("rate", "200").containsEntry("relays", "1");
      assertThat(result.score()).isEqualTo(r.p99());
      assertThat(result.secondary()).containsKeys("p50", "p99", "p99.9", "max", "messages");
    });
    assertThat(Report.latencyMarkdown(Report.latency(read, Ratios.latencyTargets(), null)))
        .contains("| H2 file → in-process | 200/s | 1 | WAKE |")
        .contains("| 400 | — | — |");
  }
}

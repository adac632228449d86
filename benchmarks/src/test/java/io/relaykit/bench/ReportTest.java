package io.relaykit.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ReportTest {

  private static final String JMH_JSON = "[\n"
      + "{\"benchmark\":\"io.relaykit.bench.ReportQueueBenchmark.cycle\",\"mode\":\"thrpt\","
      + "\"params\":{\"impl\":\"RELAYKIT\",\"capacity\":\"100000\"},"
      + "\"primaryMetric\":{\"score\":750000.0,\"scoreError\":1000.0,\"scoreUnit\":\"ops/s\"}},\n"
      + "{\"benchmark\":\"io.relaykit.bench.ReportQueueBenchmark.cycle\",\"mode\":\"thrpt\","
      + "\"params\":{\"impl\":\"RELAYKIT\",\"capacity\":\"1000\"},"
      + "\"primaryMetric\":{\"score\":3000000.0,\"scoreError\":1000.0,\"scoreUnit\":\"ops/s\"}}\n"
      + "]";

  @Test
  @DisplayName("a ratio divides the two selected scores of one run and judges the target")
  void ratios() {
    List<Report.Row> rows = Report.compute(Report.read(JMH_JSON), Ratios.all());

    Report.Row flat = rows.get(0);
    assertThat(flat.ratio().name()).contains("flat cost");
    assertThat(flat.value()).hasValue(0.25);
    assertThat(flat.verdict()).isEqualTo("MISSED");
    assertThat(rows.get(1).verdict()).isEqualTo("not run");
  }

  @Test
  @DisplayName("the table and the chart show every ratio")
  void renders() {
    List<Report.Row> rows = Report.compute(Report.read(JMH_JSON), Ratios.all());
    String md = Report.markdown(rows);
    String svg = Report.svg(rows);

    assertThat(md).contains("| report queue cycle at 100 000 vs at 1 000 pending (flat cost) | "
        + "750,000 ops/s | 3,000,000 ops/s | 0.25× | ≥ 0.80× | MISSED |");
    assertThat(md.lines().count()).isEqualTo(2 + Ratios.all().size());
    assertThat(svg).startsWith("<svg").contains("0.25×").contains("not run");
  }

  @Test
  @DisplayName("a ratio against a fixed goal divides by the goal and names it")
  void fixedGoal() {
    String json = "[{\"benchmark\":\"io.relaykit.bench.OutboxRelayBenchmark.drain\","
        + "\"params\":{\"batchSize\":\"500\",\"keys\":\"0\"},"
        + "\"primaryMetric\":{\"score\":5000.0,\"scoreError\":10.0,"
        + "\"scoreUnit\":\"ops/s\"}}]";
    Ratio goal = new Ratio("relay vs goal",
        Ratio.Select.of("OutboxRelayBenchmark.drain", "keys", "0"),
        Ratio.Select.fixed("goal", 10_000, "ops/s"), 1.0);

    Report.Row row = Report.compute(Report.read(json), List.of(goal)).get(0);

    assertThat(row.value()).hasValue(0.5);
    assertThat(row.verdict()).isEqualTo("MISSED");
    assertThat(Report.markdown(List.of(row))).contains("| 10,000 ops/s (goal) | 0.50× |");
  }

  /** JMH's {@code -lp} output for a run of the report queue and Redis benchmarks. */
  private static final String SELECTED = "Benchmarks: \n"
      + "io.relaykit.bench.RedisIdempotencyBenchmark.claim\n"
      + "  param \"impl\" = {RELAYKIT, RAW_EVALSHA}\n"
      + "io.relaykit.bench.ReportQueueBenchmark.cycle\n"
      + "  param \"impl\" = {RELAYKIT}\n"
      + "  param \"capacity\" = {1000, 100000}\n";

  @Test
  @DisplayName("JMH's -lp output gives each selected benchmark with its param values")
  void parsesSelected() {
    String lp = SELECTED + "io.relaykit.bench.KafkaConsumerBenchmark.plainLoop\n";
    assertThat(Report.parseSelected(lp)).isEqualTo(Map.of(
            "RedisIdempotencyBenchmark.claim", Map.of("impl", List.of("RELAYKIT", "RAW_EVALSHA")),
            "ReportQueueBenchmark.cycle",
            Map.of("impl", List.of("RELAYKIT"), "capacity", List.of("1000", "100000")),
            "KafkaConsumerBenchmark.plainLoop", Map.of()));
  }

  @Test
  @DisplayName("a selected combination without a result is named; one not selected is not")
  void missingRows() {
    Map<String, Map<String, List<String>>> selected = Report.parseSelected(SELECTED);
    List<Report.Result> results = Report.read(JMH_JSON);

    // Both report-queue combinations ran; neither Redis row did (they threw).
    assertThat(Report.missing(selected, results)).containsExactly(
        "RedisIdempotencyBenchmark.claim {impl=RELAYKIT}",
        "RedisIdempotencyBenchmark.claim {impl=RAW_EVALSHA}");

    List<Report.Row> rows = Report.compute(results, Ratios.all(), selected);
    Report.Row redis = row(rows, "Redis idempotency claim vs raw EVALSHA");
    assertThat(redis.verdict()).isEqualTo("FAILED (no result)");
    // RAW_LETTUCE was filtered out by -p, but RELAYKIT was selected and threw: still failed.
    assertThat(row(rows, "Redis idempotency claim vs raw SET NX PX").verdict())
        .isEqualTo("FAILED (no result)");
    // The seed design was not selected (-p impl=RELAYKIT): not run, not a failure.
    assertThat(row(rows, "report queue cycle vs the seed design").verdict()).isEqualTo("not run");
    assertThat(row(rows, "flat cost").verdict()).isEqualTo("MISSED");
    assertThat(Report.markdown(rows)).contains("| FAILED (no result) |");
    assertThat(Report.svg(rows)).contains("FAILED (no result)");
  }

  @Test
  @DisplayName("a run whose every selected combination has a result misses nothing")
  void nothingMissing() {
    String selected = "Benchmarks: \n"
        + "io.relaykit.bench.ReportQueueBenchmark.cycle\n"
        + "  param \"impl\" = {RELAYKIT}\n"
        + "  param \"capacity\" = {1000, 100000}\n";
    List<Report.Result> results = Report.read(JMH_JSON);

    assertThat(Report.missing(Report.parseSelected(selected), results)).isEmpty();
    assertThat(Report.compute(results, Ratios.all(), Report.parseSelected(selected)))
        .noneMatch(Report.Row::failed);
    // Without the selection (older callers) nothing is judged failed.
    assertThat(Report.compute(results, Ratios.all())).noneMatch(Report.Row::failed);
  }

  private static String latencyResult(String method, String rate, String relays, double p99) {
    return "{\"benchmark\":\"io.relaykit.bench.LatencyBenchmark." + method + "\","
        + "\"params\":{\"rate\":\"" + rate + "\",\"relays\":\"" + relays
        + "\",\"wake\":\"WAKE\"},"
        + "\"primaryMetric\":{\"score\":" + p99 + ",\"scoreUnit\":\"ms p99\"},"
        + "\"secondaryMetrics\":{\"p50\":{\"score\":3.0},\"p99\":{\"score\":" + p99 + "},"
        + "\"p99.9\":{\"score\":300.0},\"max\":{\"score\":400.0},"
        + "\"commit p99\":{\"score\":1.5},\"messages\":{\"score\":60000}}}";
  }

  @Test
  @DisplayName("the latency table judges the p99 target on its row only, and fails a selected row"
      + " without a result")
  void latencyTable() {
    List<Report.Result> results = Report.read("[" + latencyResult("postgresKafka", "2000", "1", 212)
        + "," + latencyResult("postgresKafka", "200", "1", 20) + "]");
    String selected = "io.relaykit.bench.LatencyBenchmark.postgresKafka\n"
        + "  param \"rate\" = {200, 2000}\n"
        + "  param \"relays\" = {1, 3}\n"
        + "  param \"wake\" = {WAKE}\n";

    List<Report.LatencyRow> rows =
        Report.latency(results, Ratios.latencyTargets(), Report.parseSelected(selected));

    assertThat(rows).extracting(Report.LatencyRow::verdict)
        .containsExactly("MISSED", "—", "FAILED (no result)", "FAILED (no result)");
    assertThat(Report.missing(Report.parseSelected(selected), results)).containsExactly(
        "LatencyBenchmark.postgresKafka {rate=200, relays=3, wake=WAKE}",
        "LatencyBenchmark.postgresKafka {rate=2000, relays=3, wake=WAKE}");
    assertThat(Report.latencyMarkdown(rows)).contains("| PostgreSQL → Kafka | 2,000/s | 1 | WAKE"
        + " | 3.0 ms | 212 ms | 300 ms | 400 ms | 1.5 ms | 60,000 | p99 ≤ 25 ms | MISSED |");

    List<Report.LatencyRow> fast = Report.latency(
        Report.read("[" + latencyResult("postgresKafka", "2000", "1", 24.9) + "]"),
        Ratios.latencyTargets(), null);
    assertThat(fast).extracting(Report.LatencyRow::verdict).containsExactly("met");
    // A run that did not select the target's row says so.
    assertThat(Report.latency(List.of(), Ratios.latencyTargets(), null))
        .extracting(Report.LatencyRow::verdict).containsExactly("not run");
  }

  private static Report.Row row(List<Report.Row> rows, String nameContains) {
    return rows.stream().filter(r -> r.ratio().name().contains(nameContains)).findFirst()
        .orElseThrow(() -> new AssertionError("no ratio named like " + nameContains));
  }

  @Test
  @DisplayName("a small ratio keeps two significant digits instead of printing 0.00")
  void smallRatios() {
    assertThat(Report.format(0.0043)).isEqualTo("0.0043");
    assertThat(Report.format(0.25)).isEqualTo("0.25");
    assertThat(Report.format(12_345)).isEqualTo("12,345");
  }

  @Test
  @DisplayName("a file that is not a JMH result is refused clearly")
  void badInput() {
    assertThatThrownBy(() -> Report.read("{\"x\":1}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("array");
  }
}

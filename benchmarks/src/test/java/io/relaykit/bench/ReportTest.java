package io.relaykit.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ReportTest {

  private static final String JMH_JSON = "[\n"
      + "{\"benchmark\":\"io.relaykit.bench.ReportQueueBenchmark.cycle\",\"mode\":\"thrpt\","
      + "\"params\":{\"impl\":\"RELAYKIT\",\"capacity\":\"1000\"},"
      + "\"primaryMetric\":{\"score\":3000000.0,\"scoreError\":1000.0,\"scoreUnit\":\"ops/s\"}},\n"
      + "{\"benchmark\":\"io.relaykit.bench.ReportQueueBenchmark.cycle\",\"mode\":\"thrpt\","
      + "\"params\":{\"impl\":\"ARRAY_BLOCKING_QUEUE\",\"capacity\":\"1000\"},"
      + "\"primaryMetric\":{\"score\":12000000.0,\"scoreError\":1000.0,\"scoreUnit\":\"ops/s\"}}\n"
      + "]";

  @Test
  @DisplayName("a ratio divides the two selected scores of one run and judges the target")
  void ratios() {
    List<Report.Row> rows = Report.compute(Report.read(JMH_JSON), Ratios.all());

    Report.Row abq = rows.get(0);
    assertThat(abq.value()).hasValue(0.25);
    assertThat(abq.verdict()).isEqualTo("MISSED");
    assertThat(rows.get(1).verdict()).isEqualTo("not run");
  }

  @Test
  @DisplayName("the table and the chart show every ratio")
  void renders() {
    List<Report.Row> rows = Report.compute(Report.read(JMH_JSON), Ratios.all());
    String md = Report.markdown(rows);
    String svg = Report.svg(rows);

    assertThat(md).contains("| report queue cycle vs ArrayBlockingQueue, 1 000 pending | "
        + "3,000,000 ops/s | 12,000,000 ops/s | 0.25× | ≥ 0.50× | MISSED |");
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

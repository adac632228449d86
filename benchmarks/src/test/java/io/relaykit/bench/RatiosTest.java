package io.relaykit.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class RatiosTest {

  @Test
  @DisplayName("a row selects relaykit and the baseline in one benchmark by their key=value params")
  void row() {
    Ratio r = Ratios.row("cycle", "ReportQueueBenchmark.cycle", "impl=RELAYKIT capacity=1000",
        " impl=SEED_BASELINE   capacity=1000 ", 0.5);

    assertThat(r.name()).isEqualTo("cycle");
    assertThat(r.numerator().benchmark()).isEqualTo("ReportQueueBenchmark.cycle");
    assertThat(r.numerator().params()).isEqualTo(Map.of("impl", "RELAYKIT", "capacity", "1000"));
    assertThat(r.denominator().benchmark()).isEqualTo("ReportQueueBenchmark.cycle");
    assertThat(r.denominator().params())
        .isEqualTo(Map.of("impl", "SEED_BASELINE", "capacity", "1000"));
    assertThat(r.target()).isEqualTo(0.5);
    assertThat(Ratios.select("KafkaConsumerBenchmark.plainLoop", "").params()).isEmpty();
  }

  @Test
  @DisplayName("a ratio against a goal divides by a fixed score in ops/s")
  void vsGoal() {
    Ratio r = Ratios.vsGoal("relay", "OutboxRelayBenchmark.drain", "keys=0", 10_000, null);

    assertThat(r.numerator().params()).isEqualTo(Map.of("keys", "0"));
    assertThat(r.denominator().fixedScore()).isEqualTo(10_000.0);
    assertThat(r.denominator().unit()).isEqualTo("ops/s");
    assertThat(r.target()).isNull();
  }

  @Test
  @DisplayName("a param that is not key=value is refused, naming it")
  void badParams() {
    for (String bad : new String[] {"impl", "impl=", "=RELAYKIT", "impl=RELAYKIT capacity"}) {
      assertThatThrownBy(() -> Ratios.select("B.m", bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("key=value").hasMessageContaining("B.m");
    }
  }

  @Test
  @DisplayName("the Kafka consumer rows take each side from the failing-keys case it names, in"
      + " whatever order JMH wrote the results")
  void consumerRowsSelectByFailingKeys() {
    java.util.List<Report.Result> results = new java.util.ArrayList<>();
    for (String mode : new String[] {"KEY", "UNORDERED"}) {
      for (String failing : new String[] {"1", "0"}) { // the failing case first
        results.add(new Report.Result("KafkaConsumerBenchmark.runtime", Map.of("mode", mode,
            "concurrency", "64", "failingKeys", failing),
            failing.equals("1") ? 9_000 : 10_000, 0, "ops/s"));
      }
    }
    results.add(new Report.Result("KafkaConsumerBenchmark.plainLoop", Map.of(), 200, 0,
        "ops/s"));

    Map<String, Double> ratios = new java.util.HashMap<>();
    for (Report.Row row : Report.compute(results, Ratios.all())) {
      row.value().ifPresent(v -> ratios.put(row.ratio().name(), v));
    }

    assertThat(ratios).hasSize(4);
    assertThat(ratios.get(
        "Kafka consumer runtime, 5 ms handler, KEY @ 64 vs plain poll loop (ideal 64×)"))
        .isEqualTo(50.0);
    assertThat(ratios.get("Kafka consumer, KEY @ 64, healthy keys beside 1 % of keys failing"
        + " transiently vs no failures")).isEqualTo(0.9);
    assertThat(ratios.get("Kafka consumer, UNORDERED @ 64, healthy keys beside 1 % of keys"
        + " failing transiently vs no failures")).isEqualTo(0.9);
  }

  @Test
  @DisplayName("every ratio has its own name")
  void namesAreUnique() {
    assertThat(Ratios.all()).extracting(Ratio::name).doesNotHaveDuplicates();
  }
}

package io.relaykit.bench;

import java.util.Map;
import java.util.Objects;

/**
 * One comparison the README reports: the score of one JMH result divided by another's, from the
 * same run, against a target (a floor the ratio should reach; null for "reported, no target").
 *
 * @param name what the ratio says, for a person
 * @param numerator the result on top
 * @param denominator the result below
 * @param target the floor the ratio should reach; null for none
 */
record Ratio(String name, Select numerator, Select denominator, Double target) {

  Ratio {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(numerator, "numerator");
    Objects.requireNonNull(denominator, "denominator");
  }

  /**
   * Picks one JMH result: the benchmark method (the part after the class name, e.g. {@code
   * ReportQueueBenchmark.cycle}) and the params it must have.
   */
  record Select(String benchmark, Map<String, String> params, Double fixedScore, String unit) {
    Select {
      Objects.requireNonNull(benchmark, "benchmark");
      params = Map.copyOf(params);
    }

    Select(String benchmark, Map<String, String> params) {
      this(benchmark, params, null, null);
    }

    /** A fixed reference score (a goal), not a measured result: the ratio then reads "× goal". */
    static Select fixed(String label, double score, String unit) {
      return new Select(label, Map.of(), score, unit);
    }

    static Select of(String benchmark, String... keyValues) {
      if (keyValues.length % 2 != 0) {
        throw new IllegalArgumentException("params come in key/value pairs");
      }
      java.util.Map<String, String> params = new java.util.LinkedHashMap<>();
      for (int i = 0; i < keyValues.length; i += 2) {
        params.put(keyValues[i], keyValues[i + 1]);
      }
      return new Select(benchmark, params);
    }

    @Override
    public String toString() {
      return params.isEmpty() ? benchmark : benchmark + params;
    }
  }
}

package io.relaykit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Turns JMH JSON result files into the ratios of {@link Ratios}: a Markdown table (printed and
 * written beside the first JSON file as {@code latest.md}) and an SVG chart ({@code chart.svg});
 * and {@link LatencyBenchmark}'s results (written in the same format) into a latency table judged
 * against {@link Ratios#latencyTargets()}.
 *
 * <p>{@code java -cp benchmarks.jar io.relaykit.bench.Report results/latest.json
 * [results/latency.json] [--selected results/selected.txt]}
 *
 * <p>With {@code --selected} (the output of {@code java -jar benchmarks.jar -lp} and of {@code
 * LatencyBenchmark --list} with the run's own arguments: every benchmark the run selected, with its
 * params), a benchmark and param combination the run selected but the JSON files hold no result
 * for threw (JMH goes on past a failing benchmark) or was never measured: the report prints the
 * whole table, names each such combination, marks the ratios and latency rows that needed it
 * {@code FAILED}, and exits with status 1. A combination the run did not
 * select (filtered out by the include patterns, {@code -e} or {@code -p}) is not a failure.
 */
public final class Report {

  /**
   * One JMH result: benchmark (class.method), params, score and error, unit, and the scores of
   * its secondary metrics (auxiliary counters such as {@code fsyncs}) by name.
   */
  record Result(String benchmark, Map<String, String> params, double score, double error,
      String unit, Map<String, Double> secondary) {
    Result(String benchmark, Map<String, String> params, double score, double error,
        String unit) {
      this(benchmark, params, score, error, unit, Map.of());
    }
  }

  /**
   * A computed ratio; {@code value} is empty when either side did not run; {@code failed} when a
   * side the run selected has no result.
   */
  record Row(Ratio ratio, Optional<Double> value, Optional<Result> top, Optional<Result> bottom,
      boolean failed) {
    Row(Ratio ratio, Optional<Double> value, Optional<Result> top, Optional<Result> bottom) {
      this(ratio, value, top, bottom, false);
    }

    String verdict() {
      if (failed) {
        return "FAILED (no result)";
      }
      if (value.isEmpty()) {
        return "not run";
      }
      if (ratio.target() == null) {
        return "—";
      }
      return value.get() >= ratio.target() ? "met" : "MISSED";
    }
  }

  private Report() {}

  /**
   * Prints the tables and writes {@code latest.md} and {@code chart.svg} beside the first JSON
   * file. Exits 1 when {@code --selected} names a benchmark the JSON files have no result for, 2 on
   * bad usage.
   *
   * @param args one or more JSON result files (JMH's, and {@link LatencyBenchmark}'s), optionally
   *     {@code --selected <file>}
   * @throws IOException when a file cannot be read or written
   */
  public static void main(String[] args) throws IOException {
    List<Path> jsons = new ArrayList<>();
    Path selectedFile = null;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--selected") && i + 1 < args.length && selectedFile == null) {
        selectedFile = Path.of(args[++i]);
      } else if (!args[i].startsWith("--")) {
        jsons.add(Path.of(args[i]));
      } else {
        jsons.clear();
        break;
      }
    }
    if (jsons.isEmpty()) {
      System.err.println("usage: Report <result.json> [<result.json> ...]"
          + " [--selected <jmh -lp output>]");
      System.exit(2);
    }
    List<Result> results = new ArrayList<>();
    for (Path json : jsons) {
      results.addAll(read(Files.readString(json)));
    }
    Map<String, Map<String, List<String>>> selected = selectedFile != null
        ? parseSelected(Files.readString(selectedFile)) : null;
    List<Row> rows = compute(results, Ratios.all(), selected);
    String table = markdown(rows) + "\n"
        + latencyMarkdown(latency(results, Ratios.latencyTargets(), selected));
    System.out.println(table);
    Path dir = jsons.get(0).toAbsolutePath().getParent();
    Files.writeString(dir.resolve("latest.md"), table, StandardCharsets.UTF_8);
    Files.writeString(dir.resolve("chart.svg"), svg(rows), StandardCharsets.UTF_8);
    System.out.println("wrote " + dir.resolve("latest.md") + " and " + dir.resolve("chart.svg"));
    if (selected != null) {
      List<String> missing = missing(selected, results);
      if (!missing.isEmpty()) {
        System.err.println("FAILED: " + missing.size() + " benchmark(s) selected by this run threw"
            + " or produced no result (see the benchmark output above for the exception):");
        for (String m : missing) {
          System.err.println("  " + m);
        }
        System.exit(1);
      }
    }
  }

  /**
   * Parses JMH's {@code -lp} output: each benchmark (shortened to {@code Class.method}, as in
   * {@link #read}) with its params and the values the run will use, in order.
   */
  static Map<String, Map<String, List<String>>> parseSelected(String lpOutput) {
    Map<String, Map<String, List<String>>> out = new java.util.LinkedHashMap<>();
    Map<String, List<String>> current = null;
    java.util.regex.Pattern param =
        java.util.regex.Pattern.compile("^\\s+param \"([^\"]+)\" = \\{(.*)\\}\\s*$");
    for (String line : lpOutput.split("\\R")) {
      java.util.regex.Matcher m = param.matcher(line);
      if (m.matches()) {
        if (current == null) {
          throw new IllegalArgumentException("a param before any benchmark: " + line);
        }
        List<String> values = new ArrayList<>();
        for (String v : m.group(2).split(",")) {
          values.add(v.trim());
        }
        current.put(m.group(1), values);
      } else if (!line.isBlank() && !Character.isWhitespace(line.charAt(0))
          && !line.startsWith("Benchmarks:") && line.indexOf('.') > 0 && !line.contains(" ")) {
        current = new java.util.LinkedHashMap<>();
        out.put(shortName(line.trim()), current);
      }
    }
    return out;
  }

  /**
   * Every benchmark and param combination in {@code selected} that no result has, as {@code
   * Class.method} or {@code Class.method {k=v, ...}}, in the order JMH lists them.
   */
  static List<String> missing(Map<String, Map<String, List<String>>> selected,
      List<Result> results) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Map<String, List<String>>> b : selected.entrySet()) {
      for (Map<String, String> combo : combinations(b.getValue())) {
        boolean found = false;
        for (Result r : results) {
          if (r.benchmark().equals(b.getKey())
              && r.params().entrySet().containsAll(combo.entrySet())) {
            found = true;
            break;
          }
        }
        if (!found) {
          out.add(combo.isEmpty() ? b.getKey() : b.getKey() + " " + combo);
        }
      }
    }
    return out;
  }

  private static List<Map<String, String>> combinations(Map<String, List<String>> params) {
    List<Map<String, String>> out = new ArrayList<>();
    out.add(new java.util.LinkedHashMap<>());
    for (Map.Entry<String, List<String>> p : params.entrySet()) {
      List<Map<String, String>> next = new ArrayList<>();
      for (Map<String, String> partial : out) {
        for (String v : p.getValue()) {
          Map<String, String> c = new java.util.LinkedHashMap<>(partial);
          c.put(p.getKey(), v);
          next.add(c);
        }
      }
      out = next;
    }
    return out;
  }

  /** {@code Class.method} of a fully qualified benchmark name. */
  private static String shortName(String full) {
    int dot = full.lastIndexOf('.', full.lastIndexOf('.') - 1);
    return dot < 0 ? full : full.substring(dot + 1);
  }

  /** Whether the run selected {@code select}: its benchmark, with each of its params' values. */
  private static boolean isSelected(Map<String, Map<String, List<String>>> selected,
      Ratio.Select select) {
    if (select.fixedScore() != null) {
      return false;
    }
    Map<String, List<String>> params = selected.get(select.benchmark());
    if (params == null) {
      return false;
    }
    for (Map.Entry<String, String> p : select.params().entrySet()) {
      List<String> values = params.get(p.getKey());
      if (values == null || !values.contains(p.getValue())) {
        return false;
      }
    }
    return true;
  }

  /** Reads JMH's JSON result format. */
  static List<Result> read(String json) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException("not a JMH JSON result: " + e.getMessage(), e);
    }
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("a JMH JSON result is an array of results");
    }
    List<Result> out = new ArrayList<>();
    for (JsonNode r : root) {
      String benchmark = shortName(r.path("benchmark").asText());
      Map<String, String> params = new java.util.LinkedHashMap<>();
      JsonNode p = r.path("params");
      for (Map.Entry<String, JsonNode> e : p.properties()) {
        params.put(e.getKey(), e.getValue().asText());
      }
      JsonNode metric = r.path("primaryMetric");
      double error = metric.path("scoreError").asDouble(Double.NaN);
      Map<String, Double> secondary = new java.util.LinkedHashMap<>();
      for (Map.Entry<String, JsonNode> e : r.path("secondaryMetrics").properties()) {
        secondary.put(e.getKey(), e.getValue().path("score").asDouble());
      }
      out.add(new Result(benchmark, params, metric.path("score").asDouble(),
          error, metric.path("scoreUnit").asText(), secondary));
    }
    return out;
  }

  static List<Row> compute(List<Result> results, List<Ratio> ratios) {
    return compute(results, ratios, null);
  }

  /**
   * The ratios; with {@code selected} (null: unknown), a ratio one of whose sides the run selected
   * but has no result is {@code failed}.
   */
  static List<Row> compute(List<Result> results, List<Ratio> ratios,
      Map<String, Map<String, List<String>>> selected) {
    List<Row> rows = new ArrayList<>();
    for (Ratio ratio : ratios) {
      Optional<Result> top = find(results, ratio.numerator());
      Optional<Result> bottom = find(results, ratio.denominator());
      Optional<Double> value = top.isPresent() && bottom.isPresent() && bottom.get().score() > 0
          ? Optional.of(top.get().score() / bottom.get().score())
          : Optional.empty();
      boolean failed = selected != null
          && (top.isEmpty() && isSelected(selected, ratio.numerator())
              || bottom.isEmpty() && isSelected(selected, ratio.denominator()));
      rows.add(new Row(ratio, value, top, bottom, failed));
    }
    return rows;
  }

  private static Optional<Result> find(List<Result> results, Ratio.Select select) {
    if (select.fixedScore() != null) {
      return Optional.of(new Result(select.benchmark(), Map.of(), select.fixedScore(), 0,
          select.unit() + " (" + select.benchmark() + ")"));
    }
    for (Result r : results) {
      if (r.benchmark().equals(select.benchmark())
          && r.params().entrySet().containsAll(select.params().entrySet())) {
        return Optional.of(r);
      }
    }
    return Optional.empty();
  }

  static String markdown(List<Row> rows) {
    StringBuilder md = new StringBuilder();
    md.append("| comparison | relaykit | baseline | ratio | target | verdict |\n");
    md.append("|---|---:|---:|---:|---:|---|\n");
    for (Row row : rows) {
      md.append("| ").append(row.ratio().name())
          .append(" | ").append(row.top().map(Report::score).orElse("—"))
          .append(" | ").append(row.bottom().map(Report::score).orElse("—"))
          .append(" | ").append(row.value().map(v -> format(v) + "×").orElse("—"))
          .append(" | ").append(row.ratio().target() == null ? "—"
              : "≥ " + format(row.ratio().target()) + "×")
          .append(" | ").append(row.verdict())
          .append(" |\n");
    }
    return md.toString();
  }

  /**
   * One row of the latency table: a {@link LatencyBenchmark} row's result, or a selected one
   * without a result ({@code failed}), or a target no row of the run applies to (not run).
   */
  record LatencyRow(String benchmark, Map<String, String> params, Optional<Result> result,
      Ratios.LatencyTarget target, boolean failed) {

    String verdict() {
      if (failed) {
        return "FAILED (no result)";
      }
      if (result.isEmpty()) {
        return "not run";
      }
      if (target == null) {
        return "—";
      }
      return result.get().score() <= target.p99Millis() ? "met" : "MISSED";
    }
  }

  private static boolean isLatency(String benchmark) {
    return benchmark.startsWith("LatencyBenchmark.");
  }

  /**
   * The latency table: every latency result in the order of the files, then every selected
   * combination without a result, then every target that no row applies to.
   */
  static List<LatencyRow> latency(List<Result> results, List<Ratios.LatencyTarget> targets,
      Map<String, Map<String, List<String>>> selected) {
    List<LatencyRow> rows = new ArrayList<>();
    for (Result r : results) {
      if (isLatency(r.benchmark())) {
        rows.add(new LatencyRow(r.benchmark(), r.params(), Optional.of(r),
            targetOf(targets, r.benchmark(), r.params()), false));
      }
    }
    if (selected != null) {
      for (Map.Entry<String, Map<String, List<String>>> b : selected.entrySet()) {
        if (!isLatency(b.getKey())) {
          continue;
        }
        for (Map<String, String> combo : combinations(b.getValue())) {
          boolean found = false;
          for (Result r : results) {
            found |= r.benchmark().equals(b.getKey())
                && r.params().entrySet().containsAll(combo.entrySet());
          }
          if (!found) {
            rows.add(new LatencyRow(b.getKey(), combo, Optional.empty(),
                targetOf(targets, b.getKey(), combo), true));
          }
        }
      }
    }
    for (Ratios.LatencyTarget t : targets) {
      boolean applied = false;
      for (LatencyRow row : rows) {
        applied |= row.target() == t;
      }
      if (!applied) {
        rows.add(new LatencyRow(t.select().benchmark(), t.select().params(), Optional.empty(), t,
            false));
      }
    }
    return rows;
  }

  private static Ratios.LatencyTarget targetOf(List<Ratios.LatencyTarget> targets,
      String benchmark, Map<String, String> params) {
    for (Ratios.LatencyTarget t : targets) {
      if (t.select().benchmark().equals(benchmark)
          && params.entrySet().containsAll(t.select().params().entrySet())) {
        return t;
      }
    }
    return null;
  }

  static String latencyMarkdown(List<LatencyRow> rows) {
    StringBuilder md = new StringBuilder();
    md.append("| commit-to-handler latency, from the due time | rate | relays | wake | p50 | p99"
        + " | p99.9 | max | due → commit p99 | messages | target | verdict |\n");
    md.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (LatencyRow row : rows) {
      LatencyBenchmark.Backend backend = LatencyBenchmark.Backend.ofBenchmark(row.benchmark());
      Map<String, String> p = row.params();
      md.append("| ").append(backend == null ? row.benchmark() : backend.label)
          .append(" | ").append(p.containsKey("rate")
              ? String.format(Locale.ROOT, "%,d/s", Long.parseLong(p.get("rate"))) : "—")
          .append(" | ").append(p.getOrDefault("relays", "—"))
          .append(" | ").append(p.getOrDefault("wake", "—"));
      for (String metric : new String[] {"p50", "p99", "p99.9", "max", "commit p99"}) {
        md.append(" | ").append(row.result().map(r -> r.secondary().get(metric))
            .map(Report::millis).orElse("—"));
      }
      md.append(" | ").append(row.result().map(r -> r.secondary().get("messages"))
              .map(v -> String.format(Locale.ROOT, "%,.0f", v)).orElse("—"))
          .append(" | ").append(row.target() == null ? "—"
              : "p99 ≤ " + java.math.BigDecimal.valueOf(row.target().p99Millis())
                  .stripTrailingZeros().toPlainString() + " ms")
          .append(" | ").append(row.verdict())
          .append(" |\n");
    }
    return md.toString();
  }

  private static String millis(double ms) {
    return (ms >= 100 ? String.format(Locale.ROOT, "%,.0f", ms)
        : String.format(Locale.ROOT, "%.1f", ms)) + " ms";
  }

  /** The score, and records per fsync where the result counted the journal's fsyncs. */
  private static String score(Result r) {
    String s = String.format(Locale.ROOT, "%,.0f %s", r.score(), r.unit());
    Double fsyncs = r.secondary().get("fsyncs");
    if (fsyncs != null && fsyncs > 0) {
      s += String.format(Locale.ROOT, " (%.1f records/fsync)", r.score() / fsyncs);
    }
    return s;
  }

  static String format(double v) {
    if (v >= 100) {
      return String.format(Locale.ROOT, "%,.0f", v);
    }
    if (v >= 10) {
      return String.format(Locale.ROOT, "%.1f", v);
    }
    if (v >= 0.1) {
      return String.format(Locale.ROOT, "%.2f", v);
    }
    // Two significant digits, so a small ratio never prints as 0.00.
    return new java.math.BigDecimal(v).round(new java.math.MathContext(2)).toPlainString();
  }

  /**
   * A horizontal bar chart of the ratios on a log scale, with each target as a tick. Plain SVG, no
   * script, so a README shows it as an image.
   */
  static String svg(List<Row> rows) {
    int labelWidth = 560;
    int chartWidth = 480;
    int rowHeight = 30;
    int top = 40;
    int height = top + rows.size() * rowHeight + 40;
    double minLog = -3;   // 0.001x
    double maxLog = 4;    // 10 000x
    StringBuilder s = new StringBuilder();
    s.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"")
        .append(labelWidth + chartWidth + 90).append("\" height=\"").append(height)
        .append("\" font-family=\"sans-serif\" font-size=\"12\">\n");
    s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s.append("<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">relaykit vs baseline,"
        + " same run (ratio, log scale; tick = target)</text>\n");
    for (int decade = (int) minLog; decade <= maxLog; decade++) {
      double x = labelWidth + (decade - minLog) / (maxLog - minLog) * chartWidth;
      s.append(String.format(Locale.ROOT,
          "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n",
          x, top - 5, x, height - 30));
      s.append(String.format(Locale.ROOT,
          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">%s×</text>\n",
          x, height - 14, format(Math.pow(10, decade))));
    }
    int y = top;
    for (Row row : rows) {
      s.append("<text x=\"").append(labelWidth - 8).append("\" y=\"").append(y + 18)
          .append("\" text-anchor=\"end\">").append(escape(row.ratio().name()))
          .append("</text>\n");
      if (row.value().isPresent()) {
        double v = row.value().get();
        double log = Math.max(minLog, Math.min(maxLog, Math.log10(v)));
        double w = (log - minLog) / (maxLog - minLog) * chartWidth;
        String color = row.ratio().target() == null ? "#6c8ebf"
            : v >= row.ratio().target() ? "#4caf50" : "#e53935";
        s.append(String.format(Locale.ROOT,
            "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"%s\"/>\n",
            labelWidth, y + 5, w, color));
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s×</text>\n",
            labelWidth + w + 6, y + 18, format(v)));
      } else {
        s.append("<text x=\"").append(labelWidth + 4).append("\" y=\"").append(y + 18)
            .append(row.failed() ? "\" fill=\"#e53935\">FAILED (no result)</text>\n"
                : "\" fill=\"#999\">not run</text>\n");
      }
      if (row.ratio().target() != null) {
        double t = (Math.log10(row.ratio().target()) - minLog) / (maxLog - minLog) * chartWidth;
        s.append(String.format(Locale.ROOT,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\" "
                + "stroke-width=\"2\"/>\n", labelWidth + t, y + 2, labelWidth + t, y + 26));
      }
      y += rowHeight;
    }
    s.append("</svg>\n");
    return s.toString();
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}

package io.relaykit.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.Sample;
import io.relaykit.chaos.History.StatusSeen;
import io.relaykit.console.TimeChart;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * Writes a run's report into its folder: {@code report.json} (every figure, the fault schedule
 * and windows, the samples), {@code report.html} (the figures and an inline SVG chart: accepted
 * and succeeded orders, backlog depth and oldest-pending age over time, fault windows shaded),
 * {@code client-log.jsonl} (every request and answer) and {@code status-log.jsonl} (every status
 * read). Costs one pass over the history.
 */
final class Report {
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(SerializationFeature.INDENT_OUTPUT);
  private static final ObjectMapper LINES = new ObjectMapper();

  private Report() {}

  static void write(Path dir, Map<String, Object> meta, History h, Checker.Verdict v)
      throws IOException {
    Files.createDirectories(dir);
    Map<String, Object> json = new LinkedHashMap<>(meta);
    json.put("passed", v.passed() && meta.get("fatal") == null);
    json.put("verdict", v);
    json.put("unrecoveredFaults", v.unrecoveredFaults());
    json.put("recoveryMaxMs", v.recoveries().stream().mapToLong(Checker.Recovery::recoveryMs)
        .max().orElse(0));
    json.put("faults", h.faults());
    json.put("samples", h.samples());
    JSON.writeValue(dir.resolve("report.json").toFile(), json);
    try (BufferedWriter w = Files.newBufferedWriter(dir.resolve("client-log.jsonl"))) {
      for (Request r : h.requests()) {
        w.write(LINES.writeValueAsString(r));
        w.newLine();
      }
    }
    try (BufferedWriter w = Files.newBufferedWriter(dir.resolve("status-log.jsonl"))) {
      for (StatusSeen s : h.statuses()) {
        w.write(LINES.writeValueAsString(s));
        w.newLine();
      }
    }
    Files.writeString(dir.resolve("report.html"), html(meta, h, v), StandardCharsets.UTF_8);
  }

  static String html(Map<String, Object> meta, History h, Checker.Verdict v) {
    boolean passed = v.passed() && meta.get("fatal") == null;
    StringBuilder b = new StringBuilder();
    b.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<title>relaykit chaos report</title><style>")
        .append("body{font:14px system-ui,sans-serif;margin:24px;color:#222}")
        .append("table{border-collapse:collapse}td{padding:2px 12px 2px 0}")
        .append(".pass{color:#186a18}.fail{color:#b00020}code{background:#f3f3f3;padding:2px}")
        .append("</style></head><body>\n");
    b.append("<h1>relaykit chaos: <span id=\"verdict\" class=\"").append(passed ? "pass" : "fail")
        .append("\">").append(passed ? "PASS" : "FAIL").append("</span></h1>\n");
    b.append("<p><code>").append(esc(String.valueOf(meta.get("command")))).append("</code></p>\n");
    b.append("<table id=\"figures\">");
    row(b, "accepted (202)", v.acceptedKeys());
    row(b, "terminal", v.terminal());
    row(b, "success / failed", v.success() + " / " + v.failed());
    row(b, "failed, not poison", v.failedNotPoison());
    row(b, "not accepted (client gave up)", v.unacceptedKeys());
    row(b, "lost", v.lost());
    row(b, "duplicate effects", v.duplicateEffects());
    row(b, "order violations", v.orderViolations());
    row(b, "Idempotency-Key violations", v.keyViolations());
    row(b, "dead letters without FAILED order", v.deadLettersWithoutFailedOrder());
    row(b, "FAILED orders without dead letter", v.failedOrdersWithoutDeadLetter());
    row(b, "effects without dedupe row", v.effectsWithoutDedupeRow());
    row(b, "max backlog", v.maxBacklog());
    row(b, "max oldest pending (ms)", v.maxOldestPendingMs());
    b.append("</table>\n<h2>Faults</h2><table id=\"faults\">");
    List<Checker.Recovery> recoveries = v.recoveries();
    for (int i = 0; i < recoveries.size(); i++) {
      Checker.Recovery r = recoveries.get(i);
      // One recovery per fault window, in the same order.
      String what = i < h.faults().size() ? h.faults().get(i).label()
          : r.fault() + " " + r.target();
      b.append("<tr><td>").append(String.format(Locale.ROOT, "%.1f s", r.startMs() / 1000.0))
          .append("</td><td>").append(esc(what)).append("</td><td>")
          .append(r.unrecovered() ? "NOT recovered within " + r.recoveryMs() + " ms"
              : "recovered in " + r.recoveryMs() + " ms").append("</td></tr>");
    }
    b.append("</table>\n<h2>Over time</h2>\n").append(svg(h.samples(), h.faults()));
    if (!v.examples().isEmpty()) {
      b.append("<h2>Findings</h2><ul>");
      v.examples().forEach((k, list) -> {
        for (String e : list) {
          b.append("<li>").append(esc(k + ": " + e)).append("</li>");
        }
      });
      b.append("</ul>");
    }
    return b.append("\n</body></html>\n").toString();
  }

  private static void row(StringBuilder b, String name, Object value) {
    b.append("<tr><td>").append(esc(name)).append("</td><td><b>").append(value)
        .append("</b></td></tr>");
  }

  static final int WIDTH = 960;
  static final int LEFT = 70;

  /**
   * Three panels over one time axis (0 to the last sample): orders, backlog, oldest pending age;
   * fault windows shaded in each. Drawn by {@link TimeChart}, as the console and the status page draw.
   */
  static String svg(List<Sample> samples, List<FaultWindow> faults) {
    long tMax = 1;
    for (Sample s : samples) {
      tMax = Math.max(tMax, s.atMs());
    }
    TimeChart.Builder chart = TimeChart.builder("chart").width(WIDTH).left(LEFT)
        .timeRange(0, tMax).maxMarks(1_000);
    for (FaultWindow f : faults) {
      chart.window(new TimeChart.Window("fault", f.fault().endsWith("kill") ? "#d62728"
          : "#ff7f0e", f.startMs(), f.endMs(), f.label(), f.label() + ": " + f.detail()));
    }
    // A negative reading means no instance answered that second: the line stops there and
    // starts again at the next reading (a killed instance's gap stays a gap).
    return chart
        .panel("orders:", line(samples, Sample::accepted, "accepted", "#1f77b4"),
            line(samples, Sample::completed, "succeeded", "#2ca02c"))
        .panel("outbox backlog", line(samples, Sample::backlog, "backlog", "#9467bd"))
        .panel("oldest pending age (ms)", line(samples, Sample::oldestPendingMs, "age",
            "#8c564b"))
        .build().svg();
  }

  private static TimeChart.Line line(List<Sample> samples, ToLongFunction<Sample> f,
      String name, String color) {
    List<TimeChart.Point> points = new ArrayList<>(samples.size());
    // A run's samples are in answer order already; a hand-built history may not be.
    List<Sample> inOrder = new ArrayList<>(samples);
    inOrder.sort(java.util.Comparator.comparingLong(Sample::atMs));
    for (Sample s : inOrder) {
      points.add(new TimeChart.Point(s.atMs(), f.applyAsLong(s)));
    }
    return new TimeChart.Line(name, color, name.equals("accepted") || name.equals("succeeded")
        ? name : "", points);
  }

  static String esc(String s) {
    return TimeChart.esc(s);
  }
}

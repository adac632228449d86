package io.relaykit.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.Sample;
import io.relaykit.chaos.History.StatusSeen;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
    for (Checker.Recovery r : v.recoveries()) {
      b.append("<tr><td>").append(String.format(Locale.ROOT, "%.1f s", r.startMs() / 1000.0))
          .append("</td><td>").append(esc(r.fault() + " " + r.target())).append("</td><td>")
          .append(r.recoveryMs() == null ? "not recovered" : "recovered in " + r.recoveryMs()
              + " ms").append("</td></tr>");
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
  static final int PANEL = 150;
  static final int GAP = 36;
  static final int LEFT = 70;

  /** Three panels over one time axis: orders, backlog, oldest pending age; faults shaded. */
  static String svg(List<Sample> samples, List<FaultWindow> faults) {
    long tMax = 1;
    for (Sample s : samples) {
      tMax = Math.max(tMax, s.atMs());
    }
    int height = 3 * (PANEL + GAP) + 20;
    int plotW = WIDTH - LEFT - 20;
    StringBuilder b = new StringBuilder();
    b.append("<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH)
        .append("\" height=\"").append(height).append("\" viewBox=\"0 0 ").append(WIDTH)
        .append(' ').append(height).append("\" font-family=\"sans-serif\" font-size=\"11\">\n");
    b.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    String[] titles = {"orders: accepted (blue), succeeded (green)", "outbox backlog",
        "oldest pending age (ms)"};
    for (int p = 0; p < 3; p++) {
      int top = GAP + p * (PANEL + GAP);
      b.append("<text x=\"").append(LEFT).append("\" y=\"").append(top - 8).append("\">")
          .append(titles[p]).append("</text>\n");
      b.append("<rect x=\"").append(LEFT).append("\" y=\"").append(top).append("\" width=\"")
          .append(plotW).append("\" height=\"").append(PANEL)
          .append("\" fill=\"none\" stroke=\"#999\"/>\n");
      for (FaultWindow f : faults) {
        double x0 = LEFT + plotW * (double) f.startMs() / tMax;
        double w = Math.max(3, plotW * (double) (f.endMs() - f.startMs()) / tMax);
        b.append(String.format(Locale.ROOT, "<rect class=\"fault\" x=\"%.1f\" y=\"%d\""
            + " width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.25\"><title>%s</title>"
            + "</rect>%n", x0, top, w, PANEL, f.fault().equals("kill") ? "#d62728" : "#ff7f0e",
            esc(f.fault() + " " + f.target() + ": " + f.detail())));
        if (p == 0) {
          b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" fill=\"#a33\">%s"
              + "</text>%n", x0 + 2, top + 12, esc(f.fault())));
        }
      }
      long max = 1;
      for (Sample s : samples) {
        max = Math.max(max, switch (p) {
          case 0 -> Math.max(s.accepted(), s.completed());
          case 1 -> s.backlog();
          default -> s.oldestPendingMs();
        });
      }
      b.append("<text x=\"").append(LEFT - 6).append("\" y=\"").append(top + 10)
          .append("\" text-anchor=\"end\">").append(max).append("</text>");
      b.append("<text x=\"").append(LEFT - 6).append("\" y=\"").append(top + PANEL)
          .append("\" text-anchor=\"end\">0</text>\n");
      if (p == 0) {
        line(b, samples, Sample::accepted, max, top, plotW, tMax, "#1f77b4", "accepted");
        line(b, samples, Sample::completed, max, top, plotW, tMax, "#2ca02c", "succeeded");
      } else if (p == 1) {
        line(b, samples, Sample::backlog, max, top, plotW, tMax, "#9467bd", "backlog");
      } else {
        line(b, samples, Sample::oldestPendingMs, max, top, plotW, tMax, "#8c564b", "age");
      }
    }
    int axis = GAP + 3 * (PANEL + GAP) - GAP + 14;
    for (int k = 0; k <= 10; k++) {
      double x = LEFT + plotW * k / 10.0;
      b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
          + "%.0f s</text>%n", x, axis, tMax * k / 10.0 / 1000.0));
    }
    return b.append("</svg>\n").toString();
  }

  private static void line(StringBuilder b, List<Sample> samples, ToLongFunction<Sample> f,
      long max, int top, int plotW, long tMax, String color, String name) {
    b.append("<polyline class=\"").append(name).append("\" fill=\"none\" stroke=\"")
        .append(color).append("\" stroke-width=\"1.5\" points=\"");
    for (Sample s : samples) {
      long y = f.applyAsLong(s);
      if (y < 0) {
        continue; // no instance answered that second
      }
      b.append(String.format(Locale.ROOT, "%.1f,%.1f ", LEFT + plotW * (double) s.atMs() / tMax,
          top + PANEL - PANEL * (double) y / max));
    }
    b.append("\"/>\n");
  }

  static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}

package io.relaykit.console;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;

/** Escaping and the page frame. Every value that reaches a page goes through {@link #esc}. */
final class Html {
  private Html() {}

  /**
   * Escapes text for an element's content or a quoted attribute value: {@link TimeChart#esc}
   * (the one escaper of the console's pages and charts), null as empty.
   */
  static String esc(String s) {
    return s == null ? "" : TimeChart.esc(s);
  }

  static String url(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** {@code ?a=1&b=2} of the non-null values, or empty; not yet HTML-escaped. */
  static String query(Map<String, String> params) {
    StringBuilder b = new StringBuilder();
    params.forEach((k, v) -> {
      if (v != null) {
        b.append(b.length() == 0 ? '?' : '&').append(url(k)).append('=').append(url(v));
      }
    });
    return b.toString();
  }

  static String time(Instant t) {
    return t == null ? "" : t.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  static String cut(String s, int max) {
    if (s == null || s.length() <= max) {
      return s;
    }
    return s.substring(0, max) + "… (" + (s.length() - max) + " more characters)";
  }

  static final String STYLE = "body{font-family:system-ui,sans-serif;margin:0;color:#222}"
      + "header{background:#263238;color:#fff;padding:8px 16px;display:flex;gap:20px;"
      + "align-items:center}header a{color:#fff}header .who{margin-left:auto;font-size:90%}"
      + "main{padding:12px 16px}table{border-collapse:collapse;margin:8px 0}"
      + "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;"
      + "font-size:90%}th{background:#eceff1}.num{text-align:right}.note{color:#555}"
      + ".error{color:#b00020;font-weight:bold}.ok{color:#1b5e20;font-weight:bold}"
      + ".badge{background:#ffb300;color:#000;padding:1px 6px;border-radius:3px}"
      + "form.inline{display:inline}pre{background:#f5f5f5;padding:6px;white-space:pre-wrap;"
      + "word-break:break-all;max-width:1000px}.filters input{width:150px}"
      + ".verdict{font-weight:bold}";

  static String page(String root, String title, String principal, boolean readOnly,
      String body) {
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
        + esc(title) + " · relaykit console</title><style>" + STYLE + "</style></head><body>"
        + "<header><strong>relaykit console</strong><a href=\"" + esc(root + "/") + "\">"
        + "Overview</a><a href=\"" + esc(root + "/dead-letters") + "\">Dead letters</a>"
        + (readOnly ? "<span class=\"badge\" id=\"read-only\">read-only</span>" : "")
        + "<span class=\"who\">" + (principal == null ? "" : "signed in as " + esc(principal))
        + "</span></header><main><h1>" + esc(title) + "</h1>" + body + "</main></body></html>\n";
  }
}

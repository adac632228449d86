package io.relaykit.console;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongFunction;
import java.util.regex.Pattern;

/**
 * A small time chart as plain SVG text: panels stacked over one time axis, each with one or more
 * lines; shaded windows (a fault, a kill) and point marks (a verdict change) drawn across every
 * panel. No script, no library, no external resource: the SVG works offline, inline in a page or
 * in a file. The operator console, the demo's status page and the chaos report draw with it.
 *
 * <p>Every panel is a {@code <g class="panel">} carrying {@code data-t0}, {@code data-t1} (the time
 * range), {@code data-ymax} (the value at the top edge) and {@code data-x}, {@code data-y}, {@code
 * data-w}, {@code data-h} (its plot area in pixels), so a test can map a polyline's points back to
 * (time, value): {@code t = t0 + (px - x) / w * (t1 - t0)}, {@code v = ymax * (y + h - py) / h}.
 * A line is one {@code <polyline class="CLASS" data-run="K">} per run of consecutive readings
 * (K from 0; one empty polyline when it has none): a point without a reading ends a run, so a
 * stretch without readings (a killed instance) stays a gap instead of being bridged. Windows are
 * {@code <rect class="CLASS">}, marks {@code <line class="mark CLASS">} with their data
 * attributes.
 *
 * <p>Bounded: a line draws at most {@link Builder#maxPoints(int)} points (beyond that it keeps the
 * lowest and highest value of each time bucket, so a peak survives); at most {@value #MAX_PANELS}
 * panels, {@value #MAX_LINES} lines per panel and {@link Builder#maxMarks(int)} windows and marks
 * each (the latest are kept; the root's {@code data-omitted} counts what was left out). Costs
 * O(points) time and output. Every label and attribute value is escaped; class names, attribute
 * names and colours are checked, and a bad one fails with an {@link IllegalArgumentException}
 * naming it. Immutable and thread-safe once built.
 */
public final class TimeChart {

  /** Most panels a chart holds. */
  public static final int MAX_PANELS = 8;
  /** Most lines a panel holds. */
  public static final int MAX_LINES = 8;
  /** Pixels right of the plot area. */
  public static final int RIGHT = 20;

  private static final Pattern CSS_CLASS = Pattern.compile("[A-Za-z_][A-Za-z0-9_-]{0,63}");
  private static final Pattern DATA_NAME = Pattern.compile("[a-z][a-z0-9-]{0,31}");
  private static final Pattern COLOR = Pattern.compile("#[0-9A-Fa-f]{3,8}|[a-z]{3,20}");

  /** One value at one time (milliseconds, on whatever origin the chart's range uses). */
  public record Point(long t, double v) {}

  /**
   * A line of one panel.
   *
   * @param cssClass its {@code class}: letters, digits, {@code _} and {@code -}
   * @param color its stroke, {@code #rgb[a]}, {@code #rrggbb[aa]} or a lower-case colour name
   * @param label its legend text; escaped
   * @param points its points in time order; a negative (or NaN, or infinite) value means "no
 *     reading": it is not drawn, and the line is not drawn across it
   */
  public record Line(String cssClass, String color, String label, List<Point> points) {
    /**
     * Checks the components and copies the points.
     *
     * @param cssClass the component of that name
     * @param color the component of that name
     * @param label the component of that name
     * @param points the component of that name
     * @throws NullPointerException if a component or a point is null
     * @throws IllegalArgumentException if the class or the colour is not of the allowed form
     */
    public Line {
      cssClass = checkClass(cssClass);
      color = checkColor(color);
      Objects.requireNonNull(label, "label");
      points = List.copyOf(points);
    }
  }

  /**
   * A shaded stretch of time, drawn in every panel (its label in the first panel only).
   *
   * @param cssClass its {@code class}
   * @param color its fill
   * @param start first instant, in the chart's time unit
   * @param end last instant; not before {@code start}
   * @param label the text written in the first panel; escaped; empty for none
   * @param title the tooltip; escaped
   */
  public record Window(String cssClass, String color, long start, long end, String label,
      String title) {
    /**
     * Checks the components.
     *
     * @param cssClass the component of that name
     * @param color the component of that name
     * @param start the component of that name
     * @param end the component of that name
     * @param label the component of that name
     * @param title the component of that name
     * @throws NullPointerException if a component is null
     * @throws IllegalArgumentException if {@code end < start}, or the class or colour is bad
     */
    public Window {
      cssClass = checkClass(cssClass);
      color = checkColor(color);
      Objects.requireNonNull(label, "label");
      Objects.requireNonNull(title, "title");
      if (end < start) {
        throw new IllegalArgumentException("window end " + end + " is before its start " + start);
      }
    }
  }

  /**
   * A moment marked by a vertical line through every panel, labelled in the first.
   *
   * @param cssClass its class, after {@code mark}
   * @param color its stroke
   * @param t when
   * @param label the text beside it in the first panel; escaped
   * @param data {@code data-NAME} attributes (lower-case names; values escaped), in order
   */
  public record Mark(String cssClass, String color, long t, String label,
      Map<String, String> data) {
    /**
     * Checks the components and copies the attributes.
     *
     * @param cssClass the component of that name
     * @param color the component of that name
     * @param t the component of that name
     * @param label the component of that name
     * @param data the component of that name
     * @throws NullPointerException if a component, a name or a value is null
     * @throws IllegalArgumentException if the class, the colour or an attribute name is bad
     */
    public Mark {
      cssClass = checkClass(cssClass);
      color = checkColor(color);
      Objects.requireNonNull(label, "label");
      Map<String, String> copy = new LinkedHashMap<>();
      data.forEach((k, v) -> {
        if (k == null || !DATA_NAME.matcher(k).matches()) {
          throw new IllegalArgumentException("data attribute name must match " + DATA_NAME
              + ", was '" + k + "'");
        }
        copy.put(k, Objects.requireNonNull(v, "data-" + k));
      });
      data = java.util.Collections.unmodifiableMap(copy);
    }
  }

  /**
   * A panel: a title and its lines, scaled from 0 to the highest value drawn (at least 1).
   *
   * @param title the heading; escaped
   * @param lines at most {@value #MAX_LINES}
   */
  public record Panel(String title, List<Line> lines) {
    /**
     * Checks the components and copies the lines.
     *
     * @param title the component of that name
     * @param lines the component of that name
     * @throws NullPointerException if a component or a line is null
     * @throws IllegalArgumentException if there are more than {@value #MAX_LINES} lines
     */
    public Panel {
      Objects.requireNonNull(title, "title");
      lines = List.copyOf(lines);
      if (lines.size() > MAX_LINES) {
        throw new IllegalArgumentException("a panel holds at most " + MAX_LINES
            + " lines, was " + lines.size());
      }
    }
  }

  private final String id;
  private final int width;
  private final int panelHeight;
  private final int gap;
  private final int left;
  private final long t0;
  private final long t1;
  private final int maxPoints;
  private final int maxMarks;
  private final LongFunction<String> timeLabel;
  private final List<Panel> panels;
  private final List<Window> windows;
  private final List<Mark> marks;
  private final int omitted;

  private TimeChart(Builder b) {
    this.id = b.id;
    this.width = b.width;
    this.panelHeight = b.panelHeight;
    this.gap = b.gap;
    this.left = b.left;
    this.maxPoints = b.maxPoints;
    this.maxMarks = b.maxMarks;
    this.panels = List.copyOf(b.panels);
    this.windows = List.copyOf(b.windows);
    this.marks = List.copyOf(b.marks);
    this.omitted = b.omitted;
    if (b.t0 != null) {
      this.t0 = b.t0;
      this.t1 = b.t1;
    } else {
      long lo = Long.MAX_VALUE;
      long hi = Long.MIN_VALUE;
      for (Panel p : panels) {
        for (Line l : p.lines()) {
          for (Point pt : l.points()) {
            lo = Math.min(lo, pt.t());
            hi = Math.max(hi, pt.t());
          }
        }
      }
      this.t0 = lo == Long.MAX_VALUE ? 0 : lo;
      this.t1 = hi == Long.MIN_VALUE ? 1 : Math.max(hi, this.t0 + 1);
    }
    long origin = this.t0;
    this.timeLabel = b.timeLabel != null ? b.timeLabel
        : t -> String.format(Locale.ROOT, "%.0f s", (t - origin) / 1000.0);
  }

  /**
   * A builder: width 960, panels 150 px high, 36 px apart, 70 px left of the plot, at most 500
   * points per line and 100 windows and marks each, time labels in seconds from the range's start.
   *
   * @param id the SVG element's {@code id}: letters, digits, {@code _} and {@code -}
   * @return a new builder
   * @throws IllegalArgumentException if {@code id} is not of that form
   */
  public static Builder builder(String id) {
    return new Builder(checkClass(id));
  }

  /** {@return the pixel width of the whole chart} */
  public int width() {
    return width;
  }

  /** {@return the pixel height of the whole chart} */
  public int height() {
    return gap + panels.size() * (panelHeight + gap) + 20;
  }

  /** {@return the plot area's left edge, in pixels from the chart's left edge} */
  public int plotLeft() {
    return left;
  }

  /** {@return the plot area's width in pixels} */
  public int plotWidth() {
    return width - left - RIGHT;
  }

  /** {@return the start of the time axis, in the points' unit} */
  public long t0() {
    return t0;
  }

  /** {@return the end of the time axis, in the points' unit} */
  public long t1() {
    return t1;
  }

  /**
   * The chart as one {@code <svg>} element.
   *
   * @return SVG text, self-contained
   */
  public String svg() {
    int height = height();
    int plotW = plotWidth();
    StringBuilder b = new StringBuilder(4096);
    b.append("<svg id=\"").append(id).append("\" xmlns=\"http://www.w3.org/2000/svg\" width=\"")
        .append(width).append("\" height=\"").append(height).append("\" viewBox=\"0 0 ")
        .append(width).append(' ').append(height).append("\" data-omitted=\"").append(omitted)
        .append("\" font-family=\"sans-serif\" font-size=\"11\">\n");
    b.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    for (int p = 0; p < panels.size(); p++) {
      Panel panel = panels.get(p);
      int top = gap + p * (panelHeight + gap);
      List<List<List<Point>>> drawn = new ArrayList<>();
      double max = 1;
      for (Line l : panel.lines()) {
        List<List<Point>> runs = downsampleRuns(runs(l.points()), maxPoints);
        drawn.add(runs);
        for (List<Point> run : runs) {
          for (Point pt : run) {
            max = Math.max(max, pt.v());
          }
        }
      }
      b.append(String.format(Locale.ROOT, "<g class=\"panel\" data-t0=\"%d\" data-t1=\"%d\""
          + " data-ymax=\"%s\" data-x=\"%d\" data-y=\"%d\" data-w=\"%d\" data-h=\"%d\">%n",
          t0, t1, number(max), left, top, plotW, panelHeight));
      b.append("<text x=\"").append(left).append("\" y=\"").append(top - 8).append("\">")
          .append(esc(panel.title()));
      for (Line l : panel.lines()) {
        if (!l.label().isEmpty()) {
          b.append(" <tspan fill=\"").append(l.color()).append("\">\u25a0 ")
              .append(esc(l.label())).append("</tspan>");
        }
      }
      b.append("</text>\n");
      b.append("<rect x=\"").append(left).append("\" y=\"").append(top).append("\" width=\"")
          .append(plotW).append("\" height=\"").append(panelHeight)
          .append("\" fill=\"none\" stroke=\"#999\"/>\n");
      for (Window w : windows) {
        if (w.end() < t0 || w.start() > t1) {
          continue;
        }
        double x0 = x(Math.max(w.start(), t0));
        double wide = Math.max(3, x(Math.min(w.end(), t1)) - x0);
        b.append(String.format(Locale.ROOT, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\""
            + " width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.25\"><title>%s</title>"
            + "</rect>%n", w.cssClass(), x0, top, wide, panelHeight, w.color(), esc(w.title())));
        if (p == 0 && !w.label().isEmpty()) {
          b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" fill=\"#a33\">%s"
              + "</text>%n", x0 + 2, top + 12, esc(w.label())));
        }
      }
      for (Mark m : marks) {
        if (m.t() < t0 || m.t() > t1) {
          continue;
        }
        double x = x(m.t());
        b.append(String.format(Locale.ROOT, "<line class=\"mark %s\" x1=\"%.1f\" x2=\"%.1f\""
            + " y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"3,2\" data-t=\"%d\"",
            m.cssClass(), x, x, top, top + panelHeight, m.color(), m.t()));
        m.data().forEach((k, v) -> b.append(" data-").append(k).append("=\"").append(esc(v))
            .append('"'));
        b.append("><title>").append(esc(m.label())).append("</title></line>\n");
        if (p == 0 && !m.label().isEmpty()) {
          b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" fill=\"%s\">%s</text>%n",
              x + 3, top + panelHeight - 4, m.color(), esc(m.label())));
        }
      }
      b.append("<text x=\"").append(left - 6).append("\" y=\"").append(top + 10)
          .append("\" text-anchor=\"end\">").append(number(max)).append("</text>");
      b.append("<text x=\"").append(left - 6).append("\" y=\"").append(top + panelHeight)
          .append("\" text-anchor=\"end\">0</text>\n");
      for (int i = 0; i < panel.lines().size(); i++) {
        Line l = panel.lines().get(i);
        List<List<Point>> runs = drawn.get(i);
        // One polyline per run of readings: a gap stays a gap. A line without a reading still
        // gets one, empty, so its class is always in the chart.
        for (int r = 0; r < Math.max(1, runs.size()); r++) {
          b.append("<polyline class=\"").append(l.cssClass()).append("\" data-run=\"")
              .append(r).append("\" fill=\"none\" stroke=\"").append(l.color())
              .append("\" stroke-width=\"1.5\" points=\"");
          for (Point pt : runs.isEmpty() ? List.<Point>of() : runs.get(r)) {
            b.append(String.format(Locale.ROOT, "%.1f,%.1f ", x(pt.t()),
                top + panelHeight - panelHeight * pt.v() / max));
          }
          b.append("\"/>\n");
        }
      }
      b.append("</g>\n");
    }
    int axis = gap + panels.size() * (panelHeight + gap) - gap + 14;
    for (int k = 0; k <= 10; k++) {
      long t = t0 + Math.round((t1 - t0) * (k / 10.0));
      b.append(String.format(Locale.ROOT, "<text class=\"tick\" x=\"%.1f\" y=\"%d\""
          + " text-anchor=\"middle\">%s</text>%n", left + plotW * k / 10.0, axis,
          esc(timeLabel.apply(t))));
    }
    return b.append("</svg>\n").toString();
  }

  private double x(long t) {
    return left + plotWidth() * (double) (t - t0) / (t1 - t0);
  }

  /**
   * The points inside the time range, cut into runs of consecutive readings: a point without a
   * reading (negative, NaN or infinite value) ends a run, so no line is drawn across it. Points
   * outside the range are left out without cutting a run.
   */
  List<List<Point>> runs(List<Point> points) {
    List<List<Point>> out = new ArrayList<>();
    List<Point> run = new ArrayList<>();
    for (Point p : points) {
      if (p.t() < t0 || p.t() > t1) {
        continue;
      }
      if (p.v() >= 0 && !Double.isInfinite(p.v())) {
        run.add(p);
      } else if (!run.isEmpty()) {
        out.add(run);
        run = new ArrayList<>();
      }
    }
    if (!run.isEmpty()) {
      out.add(run);
    }
    return out;
  }

  /**
   * At most {@code max} points over all {@code runs}: each run gets a share of {@code max} in
   * proportion to its length (rounded down) and is cut by {@link #downsample}; a run whose share
   * is one point keeps its highest point, one whose share is none is left out (too short to see
   * at that density).
   */
  static List<List<Point>> downsampleRuns(List<List<Point>> runs, int max) {
    long n = 0;
    for (List<Point> run : runs) {
      n += run.size();
    }
    if (n <= max) {
      return runs;
    }
    List<List<Point>> out = new ArrayList<>(runs.size());
    for (List<Point> run : runs) {
      int share = (int) (max * (long) run.size() / n);
      if (share >= 2) {
        out.add(downsample(run, share));
      } else if (share == 1) {
        Point hi = run.get(0);
        for (Point p : run) {
          if (p.v() > hi.v()) {
            hi = p;
          }
        }
        out.add(List.of(hi));
      }
    }
    return out;
  }

  /**
   * At most {@code max} points: beyond that, the points are cut into {@code max / 2} runs of
   * consecutive points and each run gives its lowest and its highest point, in time order, so the
   * line keeps its peaks and its troughs.
   */
  static List<Point> downsample(List<Point> points, int max) {
    int n = points.size();
    if (n <= max) {
      return points;
    }
    int buckets = max / 2;
    List<Point> out = new ArrayList<>(max);
    for (int k = 0; k < buckets; k++) {
      int from = (int) ((long) n * k / buckets);
      int to = (int) ((long) n * (k + 1) / buckets);
      int lo = from;
      int hi = from;
      for (int i = from; i < to; i++) {
        if (points.get(i).v() < points.get(lo).v()) {
          lo = i;
        }
        if (points.get(i).v() > points.get(hi).v()) {
          hi = i;
        }
      }
      out.add(points.get(Math.min(lo, hi)));
      if (lo != hi) {
        out.add(points.get(Math.max(lo, hi)));
      }
    }
    return out;
  }

  private static String number(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v)
        : String.format(Locale.ROOT, "%.2f", v);
  }

  /**
   * {@code s} escaped for SVG/XML text and double-quoted attribute values.
   *
   * @param s any text; not null
   * @return the text with {@code & < > " '} replaced by entities and control characters other
   *     than tab, newline and carriage return (which XML 1.0 does not allow) by U+FFFD
   */
  public static String esc(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '\uFFFD' : c);
      }
    }
    return b.toString();
  }

  private static String checkClass(String s) {
    if (s == null || !CSS_CLASS.matcher(s).matches()) {
      throw new IllegalArgumentException("class or id must match " + CSS_CLASS + ", was '" + s
          + "'");
    }
    return s;
  }

  private static String checkColor(String s) {
    if (s == null || !COLOR.matcher(s).matches()) {
      throw new IllegalArgumentException("color must be #rgb, #rrggbb (with alpha) or a"
          + " lower-case name, was '" + s + "'");
    }
    return s;
  }

  /**
   * Builds a {@link TimeChart}. Setters check their argument at once and throw {@link
   * IllegalArgumentException} naming it.
   */
  public static final class Builder {
    private final String id;
    private int width = 960;
    private int panelHeight = 150;
    private int gap = 36;
    private int left = 70;
    private Long t0;
    private long t1;
    private int maxPoints = 500;
    private int maxMarks = 100;
    private LongFunction<String> timeLabel;
    private final List<Panel> panels = new ArrayList<>();
    private final ArrayDeque<Window> windows = new ArrayDeque<>();
    private final ArrayDeque<Mark> marks = new ArrayDeque<>();
    private int omitted;

    private Builder(String id) {
      this.id = id;
    }

    /**
     * The chart's pixel width, 200 to 4000. Default 960.
     *
     * @param width pixels
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder width(int width) {
      this.width = range("width", width, 200, 4000);
      return this;
    }

    /**
     * Each panel's plot height, 40 to 1000. Default 150.
     *
     * @param panelHeight pixels
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder panelHeight(int panelHeight) {
      this.panelHeight = range("panelHeight", panelHeight, 40, 1000);
      return this;
    }

    /**
     * Pixels left of the plot area (for the value labels), 20 to 400. Default 70.
     *
     * @param left pixels
     * @return this builder
     * @throws IllegalArgumentException if out of range or leaving under 100 px to plot
     */
    public Builder left(int left) {
      this.left = range("left", left, 20, 400);
      if (width - left - RIGHT < 100) {
        throw new IllegalArgumentException("left " + left + " leaves under 100 px of width "
            + width + " to plot");
      }
      return this;
    }

    /**
     * The time axis; default from the earliest to the latest point. Points, windows and marks
     * outside it are not drawn (windows are clipped).
     *
     * @param t0 start
     * @param t1 end; after {@code t0}
     * @return this builder
     * @throws IllegalArgumentException if {@code t1 <= t0}
     */
    public Builder timeRange(long t0, long t1) {
      if (t1 <= t0) {
        throw new IllegalArgumentException("time range end " + t1 + " must be after its start "
            + t0);
      }
      this.t0 = t0;
      this.t1 = t1;
      return this;
    }

    /**
     * How a tick's time is written under the axis (11 ticks); the text is escaped. Default: whole
     * seconds from the range's start, {@code "15 s"}.
     *
     * @param timeLabel time to text; not null
     * @return this builder
     * @throws NullPointerException if null
     */
    public Builder timeLabel(LongFunction<String> timeLabel) {
      this.timeLabel = Objects.requireNonNull(timeLabel, "timeLabel");
      return this;
    }

    /**
     * Most points drawn per line, 4 to 10 000. Default 500.
     *
     * @param maxPoints points
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxPoints(int maxPoints) {
      this.maxPoints = range("maxPoints", maxPoints, 4, 10_000);
      return this;
    }

    /**
     * Most windows, and most marks, drawn (the latest kept), 1 to 10 000. Default 100.
     *
     * @param maxMarks count
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxMarks(int maxMarks) {
      this.maxMarks = range("maxMarks", maxMarks, 1, 10_000);
      trim(windows);
      trim(marks);
      return this;
    }

    /**
     * Adds a panel below the others.
     *
     * @param title heading
     * @param lines its lines
     * @return this builder
     * @throws IllegalArgumentException if the chart already has {@value #MAX_PANELS} panels, or
     *     the panel more than {@value #MAX_LINES} lines
     */
    public Builder panel(String title, Line... lines) {
      if (panels.size() == MAX_PANELS) {
        throw new IllegalArgumentException("a chart holds at most " + MAX_PANELS + " panels");
      }
      panels.add(new Panel(title, List.of(lines)));
      return this;
    }

    /**
     * Adds a shaded window; beyond {@link #maxMarks(int)} windows the earliest added is dropped
     * (and counted in {@code data-omitted}).
     *
     * @param window the window; not null
     * @return this builder
     */
    public Builder window(Window window) {
      windows.addLast(Objects.requireNonNull(window, "window"));
      trim(windows);
      return this;
    }

    /**
     * Adds a mark; beyond {@link #maxMarks(int)} marks the earliest added is dropped (and counted
     * in {@code data-omitted}).
     *
     * @param mark the mark; not null
     * @return this builder
     */
    public Builder mark(Mark mark) {
      marks.addLast(Objects.requireNonNull(mark, "mark"));
      trim(marks);
      return this;
    }

    private void trim(ArrayDeque<?> deque) {
      while (deque.size() > maxMarks) {
        deque.removeFirst();
        omitted++;
      }
    }

    /**
     * The chart.
     *
     * @return a new, immutable chart
     * @throws IllegalStateException if it has no panel
     */
    public TimeChart build() {
      if (panels.isEmpty()) {
        throw new IllegalStateException("a chart needs at least one panel");
      }
      return new TimeChart(this);
    }

    private static int range(String name, int value, int min, int max) {
      if (value < min || value > max) {
        throw new IllegalArgumentException(name + " must be in " + min + ".." + max + ", was "
            + value);
      }
      return value;
    }
  }
}

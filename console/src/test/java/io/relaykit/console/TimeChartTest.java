package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.console.TimeChart.Line;
import io.relaykit.console.TimeChart.Mark;
import io.relaykit.console.TimeChart.Point;
import io.relaykit.console.TimeChart.Window;
import io.relaykit.testsupport.ChartSvg;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

class TimeChartTest {

  static Document parse(String svg) throws Exception {
    return ChartSvg.parse(svg);
  }

  static List<Element> all(Document d, String tag) {
    return ChartSvg.all(d, tag);
  }

  static Element polyline(Document d, String cls) {
    return ChartSvg.polyline(d, cls);
  }

  static List<double[]> points(Element polyline) {
    return ChartSvg.points(polyline);
  }

  static List<List<double[]>> runs(Document d, String cls) {
    return ChartSvg.runs(d, cls);
  }

  /** A pixel point's time on the default geometry (x 70, width 870) of a 0..20 000 range. */
  private static long time(double[] p) {
    return Math.round((p[0] - 70) / 870 * 20_000);
  }

  private static List<Point> ramp(int n) {
    List<Point> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new Point(i * 10L, i));
    }
    return out;
  }

  @Nested
  @DisplayName("coordinates")
  class Coordinates {
    @Test
    @DisplayName("points land where the panel's data attributes say, and map back to the values")
    void pointsMapBack() throws Exception {
      String svg = TimeChart.builder("c").timeRange(0, 100)
          .panel("p", new Line("l", "#123456", "", List.of(new Point(0, 0), new Point(50, 5),
              new Point(100, 10))))
          .build().svg();
      Document d = parse(svg);
      Element panel = all(d, "g").get(0);
      assertThat(panel.getAttribute("data-t0")).isEqualTo("0");
      assertThat(panel.getAttribute("data-t1")).isEqualTo("100");
      assertThat(panel.getAttribute("data-ymax")).isEqualTo("10");
      assertThat(panel.getAttribute("data-x")).isEqualTo("70");
      assertThat(panel.getAttribute("data-y")).isEqualTo("36");
      assertThat(panel.getAttribute("data-w")).isEqualTo("870");
      assertThat(panel.getAttribute("data-h")).isEqualTo("150");
      assertThat(polyline(d, "l").getAttribute("points"))
          .isEqualTo("70.0,186.0 505.0,111.0 940.0,36.0 ");
      // And back: t = t0 + (px - x) / w * (t1 - t0), v = ymax * (y + h - py) / h.
      double[] mid = points(polyline(d, "l")).get(1);
      assertThat((mid[0] - 70) / 870 * 100).isEqualTo(50.0);
      assertThat(10 * (36 + 150 - mid[1]) / 150).isEqualTo(5.0);
    }

    @Test
    @DisplayName("without a range the axis spans the earliest to the latest point")
    void rangeFromData() throws Exception {
      TimeChart c = TimeChart.builder("c")
          .panel("p", new Line("l", "red", "", List.of(new Point(1_000, 1), new Point(3_000, 2))))
          .build();
      assertThat(c.t0()).isEqualTo(1_000);
      assertThat(c.t1()).isEqualTo(3_000);
      Document d = parse(c.svg());
      List<String> ticks = all(d, "text").stream()
          .filter(e -> e.getAttribute("class").equals("tick")).map(Element::getTextContent)
          .toList();
      assertThat(ticks).hasSize(11).startsWith("0 s").endsWith("2 s");
    }

    @Test
    @DisplayName("an empty chart still renders its panels; a reversed range is refused")
    void emptyAndReversed() throws Exception {
      Document d = parse(TimeChart.builder("c").panel("p", new Line("l", "red", "", List.of()))
          .build().svg());
      assertThat(points(polyline(d, "l"))).isEmpty();
      assertThatThrownBy(() -> TimeChart.builder("c").timeRange(5, 5))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("time range end 5");
      assertThatThrownBy(() -> TimeChart.builder("c").build())
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("at least one panel");
    }

    @Test
    @DisplayName("negative readings and points outside the range are skipped")
    void skipsNoReading() throws Exception {
      Document d = parse(TimeChart.builder("c").timeRange(0, 100)
          .panel("p", new Line("l", "red", "", List.of(new Point(0, 1), new Point(10, -1),
              new Point(20, 2), new Point(200, 50))))
          .build().svg());
      assertThat(runs(d, "l")).extracting(List::size).containsExactly(1, 1);
      assertThat(all(d, "g").get(0).getAttribute("data-ymax")).isEqualTo("2");
    }

    @Test
    @DisplayName("a stretch without readings stays a gap: no polyline crosses it")
    void gapStaysGap() throws Exception {
      List<Point> pts = new ArrayList<>();
      for (int s = 0; s <= 20; s++) {
        // Seconds 8 to 11 have no reading (the only instance was killed); NaN counts as none.
        pts.add(new Point(s * 1_000L, s >= 8 && s <= 11 ? (s == 10 ? Double.NaN : -1) : 5 + s));
      }
      Document d = parse(TimeChart.builder("c").timeRange(0, 20_000)
          .panel("p", new Line("l", "red", "", pts)).build().svg());
      List<List<double[]>> runs = runs(d, "l");
      assertThat(runs).hasSize(2);
      assertThat(all(d, "polyline")).extracting(e -> e.getAttribute("data-run"))
          .containsExactly("0", "1");
      // Mapped back to time: the first run ends at 7 s, the second starts at 12 s.
      assertThat(time(runs.get(0).get(runs.get(0).size() - 1))).isEqualTo(7_000);
      assertThat(time(runs.get(1).get(0))).isEqualTo(12_000);
      for (List<double[]> run : runs) {
        for (double[] p : run) {
          assertThat(time(p) <= 7_000 || time(p) >= 12_000).as("%s outside the gap", time(p))
              .isTrue();
        }
      }
      assertThat(runs.get(0)).hasSize(8);
      assertThat(runs.get(1)).hasSize(9);
    }

    @Test
    @DisplayName("a line that starts or ends without readings has no empty run around it")
    void leadingAndTrailingGaps() throws Exception {
      Document d = parse(TimeChart.builder("c").timeRange(0, 50)
          .panel("p", new Line("l", "red", "", List.of(new Point(0, -1), new Point(10, 3),
              new Point(20, 4), new Point(30, -1), new Point(40, -1))))
          .build().svg());
      assertThat(runs(d, "l")).extracting(List::size).containsExactly(2);
    }

    @Test
    @DisplayName("windows are shaded in every panel, clipped to the range, labelled in the first")
    void windows() throws Exception {
      Document d = parse(TimeChart.builder("c").timeRange(0, 100)
          .window(new Window("fault", "#d62728", 25, 500, "kill", "kill -9"))
          .window(new Window("fault", "#d62728", 200, 300, "late", "outside"))
          .panel("a", new Line("l", "red", "", ramp(3)))
          .panel("b", new Line("m", "red", "", ramp(3)))
          .build().svg());
      List<Element> rects = all(d, "rect").stream()
          .filter(e -> e.getAttribute("class").equals("fault")).toList();
      assertThat(rects).hasSize(2);
      assertThat(Double.parseDouble(rects.get(0).getAttribute("x"))).isEqualTo(70 + 870 * 0.25);
      assertThat(Double.parseDouble(rects.get(0).getAttribute("width"))).isEqualTo(870 * 0.75);
      assertThat(all(d, "text").stream().filter(e -> e.getTextContent().equals("kill")))
          .hasSize(1);
    }
  }

  @Nested
  @DisplayName("bounds")
  class Bounds {
    @Test
    @DisplayName("a long line is cut to maxPoints and keeps its peak and its trough")
    void downsamples() throws Exception {
      List<Point> pts = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        pts.add(new Point(i, i == 4_321 ? 900 : i == 7_000 ? 0 : 100 + (i % 7)));
      }
      Document d = parse(TimeChart.builder("c").maxPoints(100)
          .panel("p", new Line("l", "red", "", pts)).build().svg());
      List<double[]> drawn = points(polyline(d, "l"));
      assertThat(drawn).hasSizeLessThanOrEqualTo(100).hasSizeGreaterThan(50);
      assertThat(all(d, "g").get(0).getAttribute("data-ymax")).isEqualTo("900");
      // The peak is at the top edge, the trough at the bottom.
      assertThat(drawn).anySatisfy(p -> assertThat(p[1]).isEqualTo(36.0));
      assertThat(drawn).anySatisfy(p -> assertThat(p[1]).isEqualTo(186.0));
      // Still in time order.
      for (int i = 1; i < drawn.size(); i++) {
        assertThat(drawn.get(i)[0]).isGreaterThanOrEqualTo(drawn.get(i - 1)[0]);
      }
    }

    @Test
    @DisplayName("a long line with gaps is cut to maxPoints and keeps its gaps")
    void downsampleKeepsGaps() throws Exception {
      List<Point> pts = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        // No reading from 3 000 to 3 999 and from 8 000 to 8 499.
        boolean none = (i >= 3_000 && i < 4_000) || (i >= 8_000 && i < 8_500);
        pts.add(new Point(i, none ? -1 : i == 6_000 ? 900 : 100 + (i % 5)));
      }
      Document d = parse(TimeChart.builder("c").timeRange(0, 10_000).maxPoints(100)
          .panel("p", new Line("l", "red", "", pts)).build().svg());
      List<List<double[]>> runs = runs(d, "l");
      assertThat(runs).hasSize(3);
      assertThat(runs.stream().mapToInt(List::size).sum()).isLessThanOrEqualTo(100);
      // No drawn point lies inside a gap (x of t: 70 + 870 * t / 10 000).
      for (List<double[]> run : runs) {
        for (double[] p : run) {
          double t = (p[0] - 70) / 870 * 10_000;
          assertThat(t).satisfiesAnyOf(v -> assertThat(v).isLessThan(3_000.5),
              v -> assertThat(v).isBetween(3_999.5, 8_000.5),
              v -> assertThat(v).isGreaterThan(8_499.5));
        }
      }
      assertThat(runs.get(1)).anySatisfy(p -> assertThat(p[1]).isEqualTo(36.0));
    }

    @Test
    @DisplayName("runs too short for their share of maxPoints keep their peak or are left out")
    void downsampleRunsBounded() {
      List<List<Point>> runs = new ArrayList<>();
      for (int r = 0; r < 60; r++) {
        runs.add(List.of(new Point(r * 3L, 1), new Point(r * 3L + 1, 2 + r)));
      }
      // 120 points over 100: each two-point run's share is one point, its peak.
      List<List<Point>> out = TimeChart.downsampleRuns(runs, 100);
      assertThat(out).hasSize(60).allSatisfy(run -> assertThat(run).hasSize(1));
      assertThat(out.get(7)).containsExactly(new Point(22, 9));
      // Under the bound nothing changes.
      assertThat(TimeChart.downsampleRuns(runs.subList(0, 10), 100))
          .isEqualTo(runs.subList(0, 10));
      // 300 points over 100: a share of none leaves the run out; the total stays bounded.
      List<List<Point>> many = new ArrayList<>(runs);
      many.add(ramp(180));
      List<List<Point>> cut = TimeChart.downsampleRuns(many, 100);
      assertThat(cut.stream().mapToInt(List::size).sum()).isLessThanOrEqualTo(100);
      assertThat(cut).hasSize(1);
    }

    @Test
    @DisplayName("a short line is drawn point for point")
    void noDownsampleBelowBound() {
      List<Point> pts = ramp(50);
      assertThat(TimeChart.downsample(pts, 50)).isEqualTo(pts);
      assertThat(TimeChart.downsample(ramp(51), 50)).hasSizeLessThanOrEqualTo(50);
    }

    @Test
    @DisplayName("beyond maxMarks the earliest marks are dropped and counted")
    void marksBounded() throws Exception {
      TimeChart.Builder b = TimeChart.builder("c").timeRange(0, 1_000).maxMarks(3);
      for (int i = 0; i < 10; i++) {
        b.mark(new Mark("verdict", "red", i * 10L, "m" + i, Map.of("verdict", "V" + i)));
      }
      Document d = parse(b.panel("p", new Line("l", "red", "", ramp(3))).build().svg());
      List<Element> marks = all(d, "line");
      assertThat(marks).extracting(e -> e.getAttribute("data-verdict"))
          .containsExactly("V7", "V8", "V9");
      assertThat(d.getDocumentElement().getAttribute("data-omitted")).isEqualTo("7");
    }

    @Test
    @DisplayName("at most 8 panels and 8 lines a panel; sizes are checked")
    void panelsBounded() {
      TimeChart.Builder b = TimeChart.builder("c");
      for (int i = 0; i < TimeChart.MAX_PANELS; i++) {
        b.panel("p" + i);
      }
      assertThatThrownBy(() -> b.panel("one more")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("at most 8 panels");
      Line[] nine = new Line[9];
      for (int i = 0; i < 9; i++) {
        nine[i] = new Line("l" + i, "red", "", List.of());
      }
      assertThatThrownBy(() -> TimeChart.builder("c").panel("p", nine))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 8 lines");
      assertThatThrownBy(() -> TimeChart.builder("c").maxPoints(3))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxPoints must be in 4..10000, was 3");
      assertThatThrownBy(() -> TimeChart.builder("c").width(100))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("width");
    }
  }

  @Nested
  @DisplayName("escaping")
  class Escaping {
    @Test
    @DisplayName("titles, labels, tooltips, tick labels and data values are escaped")
    void escapesEverything() throws Exception {
      String evil = "<script>alert('x')</script>&\"";
      String svg = TimeChart.builder("c").timeRange(0, 10).timeLabel(t -> evil)
          .window(new Window("w", "red", 1, 2, evil, evil))
          .mark(new Mark("m", "red", 5, evil, Map.of("why", evil)))
          .panel(evil, new Line("l", "red", evil, ramp(2)))
          .build().svg();
      assertThat(svg).doesNotContain("<script").doesNotContain("'x'");
      Document d = parse(svg);
      assertThat(all(d, "script")).isEmpty();
      // Parsed back, the text is exactly what was given.
      assertThat(all(d, "line").get(0).getAttribute("data-why")).isEqualTo(evil);
      assertThat(all(d, "title")).extracting(Element::getTextContent).contains(evil);
      assertThat(all(d, "text").stream().map(Element::getTextContent))
          .contains(evil, evil + " \u25a0 " + evil);
    }

    @Test
    @DisplayName("class names, ids, colours and data names that could break out are refused")
    void refusesMarkup() {
      assertThatThrownBy(() -> TimeChart.builder("x\" onload=\"alert(1)"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("class or id");
      assertThatThrownBy(() -> new Line("a b", "red", "", List.of()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a b'");
      assertThatThrownBy(() -> new Line("a", "red\"/><script>", "", List.of()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("color");
      assertThatThrownBy(() -> new Mark("m", "red", 0, "", Map.of("on load", "x")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'on load'");
      assertThatThrownBy(() -> new Window("w", "red", 5, 4, "", ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("before its start");
    }
  }
}

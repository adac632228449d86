package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Sample;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The report's chart and fault table, read from the SVG and HTML text: a killed instance's
 * seconds without a reading stay a gap in every line drawn from the demo's metrics, and faults
 * are labelled as what they were.
 */
class ChaosReportChartTest {

  /** 30 s; the only instance is down from 10 s to 14 s (no reading), samples arrive shuffled. */
  private static List<Sample> samples() {
    List<Sample> out = new ArrayList<>();
    for (int s = 0; s <= 30; s++) {
      boolean down = s >= 10 && s <= 14;
      out.add(new Sample(s * 1_000L, 40L * s, down ? -1 : 35L * s, down ? -1 : 5 + s % 3,
          down ? -1 : 100));
    }
    Collections.shuffle(out, new java.util.Random(7));
    return out;
  }

  private static List<FaultWindow> faults() {
    return List.of(
        new FaultWindow("kill", "0", "", "kill -9 pid 11, restarted as pid 12", 10_000, 14_500),
        new FaultWindow("partition", "rabbitmq", "refuse", "refuse rabbitmq for 5000 ms",
            20_000, 25_000));
  }

  private static Document parse(String svg) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return f.newDocumentBuilder().parse(new ByteArrayInputStream(
        svg.getBytes(StandardCharsets.UTF_8)));
  }

  private static List<Element> all(Document d, String tag) {
    NodeList nodes = d.getElementsByTagName(tag);
    List<Element> out = new ArrayList<>();
    for (int i = 0; i < nodes.getLength(); i++) {
      out.add((Element) nodes.item(i));
    }
    return out;
  }

  /** The times (ms) of each run of line {@code cls}, mapped back through its panel's data. */
  private static List<List<Long>> runTimes(Document d, String cls) {
    List<List<Long>> out = new ArrayList<>();
    for (Element e : all(d, "polyline")) {
      if (!e.getAttribute("class").equals(cls)) {
        continue;
      }
      Element g = (Element) e.getParentNode();
      double x = Double.parseDouble(g.getAttribute("data-x"));
      double w = Double.parseDouble(g.getAttribute("data-w"));
      double t0 = Double.parseDouble(g.getAttribute("data-t0"));
      double t1 = Double.parseDouble(g.getAttribute("data-t1"));
      List<Long> times = new ArrayList<>();
      for (String pair : e.getAttribute("points").trim().split("\\s+")) {
        if (!pair.isEmpty()) {
          double px = Double.parseDouble(pair.split(",")[0]);
          times.add(Math.round((t0 + (px - x) / w * (t1 - t0)) / 1_000) * 1_000);
        }
      }
      out.add(times);
    }
    return out;
  }

  @Test
  @DisplayName("lines read from the demo stop at a killed instance's gap and resume after it")
  void killedInstanceGapStaysGap() throws Exception {
    Document d = parse(Report.svg(samples(), faults()));
    for (String line : List.of("succeeded", "backlog", "age")) {
      List<List<Long>> runs = runTimes(d, line);
      assertThat(runs).as(line).hasSize(2);
      assertThat(runs.get(0)).as(line).startsWith(0L).endsWith(9_000L).isSorted().hasSize(10);
      assertThat(runs.get(1)).as(line).startsWith(15_000L).endsWith(30_000L).isSorted()
          .hasSize(16);
    }
    // The client's own count has a reading every second: one unbroken line.
    assertThat(runTimes(d, "accepted")).hasSize(1)
        .allSatisfy(run -> assertThat(run).hasSize(31).isSorted());
  }

  @Test
  @DisplayName("fault windows are labelled as what they were, with the detail in the tooltip")
  void faultsLabelled() throws Exception {
    Document d = parse(Report.svg(samples(), faults()));
    List<String> labels = all(d, "text").stream().map(Element::getTextContent)
        .filter(t -> t.contains(" of ")).toList();
    assertThat(labels).containsExactly("kill of instance 0", "partition (refuse) of rabbitmq");
    List<String> titles = all(d, "rect").stream()
        .filter(e -> e.getAttribute("class").equals("fault"))
        .map(e -> e.getElementsByTagName("title").item(0).getTextContent()).distinct().toList();
    assertThat(titles).containsExactly(
        "kill of instance 0: kill -9 pid 11, restarted as pid 12",
        "partition (refuse) of rabbitmq: refuse rabbitmq for 5000 ms");
  }

  @Test
  @DisplayName("every fault kind has a label that names it and its target")
  void labels() {
    assertThat(new FaultWindow("kill", "2", "", "", 0, 1).label())
        .isEqualTo("kill of instance 2");
    assertThat(new FaultWindow("partition", "db", "cut", "", 0, 1).label())
        .isEqualTo("partition (cut) of db");
    assertThat(new FaultWindow("partition", "kafka", "", "", 0, 1).label())
        .isEqualTo("partition of kafka");
    assertThat(new FaultWindow("broker-kill", "", "", "", 0, 1).label())
        .isEqualTo("kill of the Kafka broker");
    assertThat(new FaultWindow("clock", "1", "", "", 0, 1).label())
        .isEqualTo("clock skew of instance 1");
  }

  @Test
  @DisplayName("the report's fault table and replay command read as the run was")
  void htmlFaultTableAndCommand() {
    List<Sample> samples = samples();
    History h = new History(List.of(), List.of(), List.of(), List.of(), List.of(), Set.of(), 0,
        samples, faults(), ChaosOptions.POISON_SKU);
    Checker.Verdict v = Checker.check(h);
    Map<String, Object> meta = new LinkedHashMap<>();
    ChaosOptions o = ChaosOptions.parse("--transport", "rabbitmq", "--faults", "partition,kill",
        "--partition-modes", "refuse", "--seed", "2");
    meta.put("command", ChaosRun.replayCommand(o));
    String html = Report.html(meta, h, v);
    assertThat(html).contains("<code>./relaykit chaos --transport rabbitmq --faults"
        + " kill,partition --partition-modes refuse --seed 2</code>");
    assertThat(html).contains("</td><td>kill of instance 0</td>")
        .contains("</td><td>partition (refuse) of rabbitmq</td>");
  }
}

package io.relaykit.testsupport;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** Reads a TimeChart's SVG through the DOM, as its tests and the pages' tests do. */
public final class ChartSvg {
  private ChartSvg() {}

  /**
   * Parses the SVG as XML: it must be well-formed.
   *
   * @param svg the SVG text
   * @return its document
   * @throws Exception if it is not well-formed XML
   */
  public static Document parse(String svg) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return f.newDocumentBuilder().parse(new ByteArrayInputStream(
        svg.getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * Every element named {@code tag}, in document order.
   *
   * @param d the document
   * @param tag the element name
   * @return the elements
   */
  public static List<Element> all(Document d, String tag) {
    NodeList nodes = d.getElementsByTagName(tag);
    List<Element> out = new ArrayList<>();
    for (int i = 0; i < nodes.getLength(); i++) {
      out.add((Element) nodes.item(i));
    }
    return out;
  }

  /**
   * The first polyline of class {@code cls}.
   *
   * @param d the document
   * @param cls the line's class
   * @return the polyline
   * @throws java.util.NoSuchElementException if there is none
   */
  public static Element polyline(Document d, String cls) {
    return all(d, "polyline").stream().filter(e -> e.getAttribute("class").equals(cls))
        .findFirst().orElseThrow();
  }

  /**
   * A polyline's points in pixels.
   *
   * @param polyline the polyline
   * @return its (x, y) pairs
   */
  public static List<double[]> points(Element polyline) {
    List<double[]> out = new ArrayList<>();
    for (String pair : polyline.getAttribute("points").trim().split("\\s+")) {
      if (pair.isEmpty()) {
        continue;
      }
      String[] xy = pair.split(",");
      out.add(new double[] {Double.parseDouble(xy[0]), Double.parseDouble(xy[1])});
    }
    return out;
  }

  /**
   * Every polyline of line {@code cls}, in order: its runs of readings, as pixel points.
   *
   * @param d the document
   * @param cls the line's class
   * @return the non-empty runs
   */
  public static List<List<double[]>> runs(Document d, String cls) {
    return all(d, "polyline").stream().filter(e -> e.getAttribute("class").equals(cls))
        .map(ChartSvg::points).filter(p -> !p.isEmpty()).toList();
  }
}

package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * "One dependency": the starter's published pom brings the storage (relaykit-jdbc, Boot's
 * DataSource auto-configuration, Spring JDBC) as regular dependencies and keeps the transports
 * optional. The tests' class path cannot show this (optional dependencies are on it too), so this
 * reads the pom the starter is published with.
 */
@DisplayName("The starter's dependencies")
class StarterDependenciesTest {

  /** artifactId to "scope/optional" of the pom's direct dependencies. */
  private static final Map<String, String> DEPENDENCIES = new LinkedHashMap<>();

  @BeforeAll
  static void read() throws Exception {
    Path pom = Path.of("pom.xml");
    assertThat(pom).as("run from the module's directory (surefire's default)").exists();
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Document doc;
    try (var in = Files.newInputStream(pom)) {
      doc = f.newDocumentBuilder().parse(in);
    }
    Element project = doc.getDocumentElement();
    Element deps = child(project, "dependencies");
    NodeList list = deps.getElementsByTagName("dependency");
    for (int i = 0; i < list.getLength(); i++) {
      Element d = (Element) list.item(i);
      String scope = text(d, "scope", "compile");
      String optional = text(d, "optional", "false");
      DEPENDENCIES.put(text(d, "artifactId", "?") + (text(d, "type", "jar").equals("jar") ? ""
          : ":" + text(d, "type", "jar")), scope + (optional.equals("true") ? "/optional" : ""));
    }
  }

  @Test
  @DisplayName("storage on H2 or PostgreSQL comes with the starter: relaykit-jdbc, spring-boot-jdbc"
      + " and spring-jdbc are regular compile dependencies")
  void storageIsRegular() {
    assertThat(DEPENDENCIES).containsEntry("relaykit-jdbc", "compile")
        .containsEntry("spring-boot-jdbc", "compile").containsEntry("spring-jdbc", "compile");
  }

  @Test
  @DisplayName("health and the dead-letter endpoint come with the starter: Boot's actuator"
      + " auto-configuration and health are regular compile dependencies")
  void actuatorIsRegular() {
    assertThat(DEPENDENCIES).containsEntry("spring-boot-actuator-autoconfigure", "compile")
        .containsEntry("spring-boot-health", "compile");
  }

  @Test
  @DisplayName("typed payloads come with the starter: relaykit-codec-jackson (JSON on Jackson 3)"
      + " is a regular compile dependency")
  void payloadCodecIsRegular() {
    assertThat(DEPENDENCIES).containsEntry("relaykit-codec-jackson", "compile");
  }

  @Test
  @DisplayName("transports, the Redis fast tier, Micrometer and Spring Security (for the console)"
      + " stay optional add-ons")
  void addOnsStayOptional() {
    for (String addOn : new String[] {"relaykit-kafka", "relaykit-rabbitmq", "relaykit-redis",
        "relaykit-micrometer", "spring-security-web"}) {
      assertThat(DEPENDENCIES).containsEntry(addOn, "compile/optional");
    }
  }

  @Test
  @DisplayName("the tests get no storage of their own: no test-scoped JDBC starter, driver or pool")
  void testsRelyOnTheStartersStorage() {
    for (String storage : new String[] {"spring-boot-starter-jdbc", "relaykit-jdbc", "h2",
        "postgresql", "HikariCP", "spring-boot-jdbc", "spring-jdbc"}) {
      assertThat(DEPENDENCIES.get(storage)).as(storage).isNotEqualTo("test");
    }
  }

  private static Element child(Element parent, String name) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e;
      }
    }
    throw new AssertionError("pom.xml has no <" + name + "> under <" + parent.getTagName() + ">");
  }

  private static String text(Element parent, String name, String absent) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e.getTextContent().strip();
      }
    }
    return absent;
  }
}

package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.xpath.XPathConstants;
import javax.xml.xpath.XPathFactory;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The {@code pom.xml} blocks of README.md's quick starts are whole, well-formed POMs that name the
 * versions this build makes: relaykit's own version and the Spring Boot version the starter is
 * built against. (The quick starts' Java code is checked by DocSnippetsTest and run by the
 * plain-java-quickstart invoker project and SpringBootQuickStartTest.)
 */
class ReadmePomsTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ""))
      .toAbsolutePath().getParent();

  @Test
  @DisplayName("README's quick-start poms are complete and name this build's versions")
  void readmePomsNameThisBuildsVersions() throws Exception {
    Document build = parse(Files.readString(ROOT.resolve("pom.xml"), StandardCharsets.UTF_8));
    String relaykitVersion = text(build, "/*[local-name()='project']/*[local-name()='version']");
    String bootVersion = text(build,
        "/*[local-name()='project']/*[local-name()='properties']/*[local-name()='spring-boot.version']");
    assertThat(relaykitVersion).isNotBlank();
    assertThat(bootVersion).isNotBlank();

    List<String> poms = xmlBlocks(Files.readString(ROOT.resolve("README.md"), StandardCharsets.UTF_8));
    assertThat(poms).as("pom.xml blocks in README.md (plain Java, Spring Boot)").hasSize(2);
    List<String> relaykitDependencies = new ArrayList<>();
    for (String pom : poms) {
      Document doc = parse(pom);
      assertThat(text(doc, "/*[local-name()='project']/*[local-name()='modelVersion']")).isEqualTo("4.0.0");
      assertThat(text(doc, "/*[local-name()='project']/*[local-name()='artifactId']")).isNotBlank();
      NodeList deps = (NodeList) XPathFactory.newInstance().newXPath().evaluate(
          "//*[local-name()='dependency']", doc, XPathConstants.NODESET);
      for (int i = 0; i < deps.getLength(); i++) {
        Element dep = (Element) deps.item(i);
        if ("io.relaykit".equals(child(dep, "groupId"))) {
          relaykitDependencies.add(child(dep, "artifactId"));
          assertThat(child(dep, "version")).as(child(dep, "artifactId") + "'s version in README")
              .isEqualTo(relaykitVersion);
        }
      }
      String parent = text(doc,
          "/*[local-name()='project']/*[local-name()='parent']/*[local-name()='artifactId']");
      if (!parent.isEmpty()) {
        assertThat(parent).isEqualTo("spring-boot-starter-parent");
        assertThat(text(doc, "/*[local-name()='project']/*[local-name()='parent']/*[local-name()='version']"))
            .as("the Spring Boot version in README").isEqualTo(bootVersion);
        assertThat(pom).as("the Boot pom declares the plugin behind mvn spring-boot:run")
            .contains("<artifactId>spring-boot-maven-plugin</artifactId>");
      } else {
        assertThat(pom).as("the plain pom sets the Java level (Maven's default compiler is older)")
            .contains("<maven.compiler.source>17</maven.compiler.source>")
            .contains("<maven.compiler.target>17</maven.compiler.target>");
      }
    }
    assertThat(relaykitDependencies)
        .containsExactlyInAnyOrder("relaykit-jdbc", "relaykit-spring-boot-starter");
  }

  @Test
  @DisplayName("every relaykit version that README.md and docs/ name is this build's version")
  void docsNameThisBuildsVersion() throws Exception {
    String version = text(parse(Files.readString(ROOT.resolve("pom.xml"), StandardCharsets.UTF_8)),
        "/*[local-name()='project']/*[local-name()='version']");
    Pattern named = Pattern.compile(
        "relaykit-bom:([^\"`)\\s]+)|<artifactId>relaykit-[a-z-]+</artifactId>\\s*<version>([^<]+)</version>");
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    List<String> found = new ArrayList<>();
    for (Path page : pages) {
      Matcher m = named.matcher(Files.readString(page, StandardCharsets.UTF_8));
      while (m.find()) {
        found.add(ROOT.relativize(page) + ": " + (m.group(1) != null ? m.group(1) : m.group(2)));
      }
    }
    assertThat(found).as("relaykit versions named in the docs").isNotEmpty()
        .allSatisfy(f -> assertThat(f).endsWith(": " + version));
  }

  static List<String> xmlBlocks(String page) {
    List<String> blocks = new ArrayList<>();
    int at = 0;
    while ((at = page.indexOf("```xml\n", at)) >= 0) {
      int start = at + "```xml\n".length();
      int end = page.indexOf("```", start);
      blocks.add(page.substring(start, end));
      at = end + 3;
    }
    return blocks;
  }

  private static Document parse(String xml) throws Exception {
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setNamespaceAware(true);
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return factory.newDocumentBuilder()
        .parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
  }

  private static String text(Document doc, String xpath) throws Exception {
    return ((String) XPathFactory.newInstance().newXPath().evaluate(xpath, doc, XPathConstants.STRING))
        .trim();
  }

  private static String child(Element element, String name) {
    NodeList children = element.getElementsByTagNameNS("*", name);
    return children.getLength() == 0 ? "" : children.item(0).getTextContent().trim();
  }
}

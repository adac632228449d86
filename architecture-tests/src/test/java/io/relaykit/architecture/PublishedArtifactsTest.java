package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * What the reactor publishes, read from its poms: every module is either published (installed,
 * deployed, managed by relaykit-bom, named {@code relaykit-*}) or explicitly skipped (examples,
 * benchmarks, these tests), so a new module cannot slip into the local repository, or out of the
 * BOM, unnoticed.
 */
class PublishedArtifactsTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", "")).toAbsolutePath()
      .getParent();

  @Test
  @DisplayName("relaykit-bom manages exactly the published modules, at the project version")
  void bomManagesEveryPublishedModule() throws Exception {
    Document parent = read(ROOT.resolve("pom.xml"));
    Map<String, Boolean> published = new LinkedHashMap<>();
    for (String module : children(parent.getDocumentElement(), "modules", "module")) {
      Document pom = read(ROOT.resolve(module).resolve("pom.xml"));
      String artifactId = text(pom.getDocumentElement(), "artifactId").orElseThrow();
      boolean skipped = text(pom.getDocumentElement(), "properties", "maven.install.skip")
          .map(Boolean::parseBoolean).orElse(false);
      boolean deploySkipped = text(pom.getDocumentElement(), "properties", "maven.deploy.skip")
          .map(Boolean::parseBoolean).orElse(false);
      assertThat(deploySkipped).as(module + ": install and deploy are skipped together")
          .isEqualTo(skipped);
      if (!artifactId.equals("relaykit-bom")) {
        published.put(artifactId, !skipped);
      }
    }
    List<String> expected = new ArrayList<>();
    published.forEach((id, isPublished) -> {
      if (isPublished) {
        expected.add(id);
      }
    });
    assertThat(expected).as("published artifacts")
        .containsExactlyInAnyOrder("relaykit-core", "relaykit-tck", "relaykit-guice",
            "relaykit-jdbc", "relaykit-redis", "relaykit-kafka", "relaykit-rabbitmq",
            "relaykit-poller", "relaykit-micrometer", "relaykit-opentelemetry",
            "relaykit-codec-jackson",
            "relaykit-spring-boot-starter", "relaykit-test", "relaykit-console");

    Document bom = read(ROOT.resolve("bom").resolve("pom.xml"));
    Element managed = child(child(bom.getDocumentElement(), "dependencyManagement").orElseThrow(),
        "dependencies").orElseThrow();
    List<String> inBom = new ArrayList<>();
    for (Element dependency : elements(managed, "dependency")) {
      assertThat(text(dependency, "groupId")).contains("io.relaykit");
      assertThat(text(dependency, "version")).as("version of " + text(dependency, "artifactId"))
          .contains("${project.version}");
      inBom.add(text(dependency, "artifactId").orElseThrow());
    }
    assertThat(inBom).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(text(bom.getDocumentElement(), "version"))
        .as("relaykit-bom's version is the reactor's")
        .isEqualTo(text(parent.getDocumentElement(), "version"));
    assertThat(child(bom.getDocumentElement(), "parent"))
        .as("relaykit-bom has no parent, so importing it pins relaykit artifacts only").isEmpty();
  }

  @Test
  @DisplayName("every package of main code has a package-info.java saying what it guarantees")
  void everyPackageHasPackageInfo() throws Exception {
    Document parent = read(ROOT.resolve("pom.xml"));
    List<String> missing = new ArrayList<>();
    int packages = 0;
    for (String module : children(parent.getDocumentElement(), "modules", "module")) {
      Path sources = ROOT.resolve(module).resolve("src").resolve("main").resolve("java");
      if (!Files.isDirectory(sources)) {
        continue;
      }
      List<Path> directories;
      try (Stream<Path> walk = Files.walk(sources)) {
        directories = walk.filter(Files::isDirectory).toList();
      }
      for (Path directory : directories) {
        boolean hasJava;
        try (Stream<Path> files = Files.list(directory)) {
          hasJava = files.anyMatch(f -> f.toString().endsWith(".java"));
        }
        if (!hasJava) {
          continue;
        }
        packages++;
        Path info = directory.resolve("package-info.java");
        if (!Files.isRegularFile(info)
            || !Files.readString(info, StandardCharsets.UTF_8).contains("/**")) {
          missing.add(module + ": " + sources.relativize(directory).toString().replace('/', '.'));
        }
      }
    }
    assertThat(packages).as("packages found").isGreaterThan(15);
    assertThat(missing).as("packages without a documented package-info.java").isEmpty();
  }

  private static Document read(Path pom) throws Exception {
    assertThat(pom).exists();
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return factory.newDocumentBuilder().parse(Files.newInputStream(pom));
  }

  private static List<String> children(Element element, String container, String name) {
    List<String> out = new ArrayList<>();
    child(element, container).ifPresent(c -> elements(c, name).forEach(e ->
        out.add(e.getTextContent().trim())));
    return out;
  }

  private static Optional<String> text(Element element, String... path) {
    Optional<Element> current = Optional.of(element);
    for (String name : path) {
      current = current.flatMap(e -> child(e, name));
    }
    return current.map(e -> e.getTextContent().trim());
  }

  private static Optional<Element> child(Element element, String name) {
    List<Element> found = elements(element, name);
    return found.isEmpty() ? Optional.empty() : Optional.of(found.get(0));
  }

  private static List<Element> elements(Element element, String name) {
    List<Element> out = new ArrayList<>();
    NodeList nodes = element.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      Node node = nodes.item(i);
      if (node instanceof Element e && e.getTagName().equals(name)) {
        out.add(e);
      }
    }
    return out;
  }
}

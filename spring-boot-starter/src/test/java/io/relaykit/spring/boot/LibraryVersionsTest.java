package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The libraries that both relaykit's parent and Spring Boot's BOM manage come, on the starter's
 * test class path, at relaykit's versions (the parent's {@code *.version} properties, handed in
 * by the pom as {@code expected.version.<artifactId>}): Boot's older ones are not what relaykit is
 * tested with. README "Spring Boot" lists Boot's property for each.
 */
class LibraryVersionsTest {

  private static final String PREFIX = "expected.version.";
  private static final Pattern JAR = Pattern.compile(".*/([^/]+)/([^/]+)/\\1-\\2\\.jar");

  @Test
  @DisplayName("kafka-clients, amqp-client, HikariCP, PostgreSQL, H2, SLF4J and Lettuce are"
      + " relaykit's")
  void sharedLibrariesAreRelaykitsVersions() {
    Map<String, String> expected = new TreeMap<>();
    System.getProperties().forEach((k, v) -> {
      if (k.toString().startsWith(PREFIX)) {
        expected.put(k.toString().substring(PREFIX.length()), v.toString());
      }
    });
    assertThat(expected).as("expected versions from the pom (run through Maven)")
        .containsKeys("kafka-clients", "amqp-client", "HikariCP", "postgresql", "h2",
            "slf4j-api", "lettuce-core");

    Map<String, String> onClassPath = new TreeMap<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Matcher m = JAR.matcher(entry.replace(File.separatorChar, '/'));
      if (m.matches() && expected.containsKey(m.group(1))) {
        onClassPath.put(m.group(1), m.group(2));
      }
    }
    assertThat(onClassPath).as("versions on the test class path").isEqualTo(expected);
  }
}

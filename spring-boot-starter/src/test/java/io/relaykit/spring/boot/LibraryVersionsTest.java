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
 * test class path, at the versions the pom hands in as {@code expected.version.<artifactId>}:
 * relaykit's pins (the parent's {@code *.version} properties) in the default test run, Spring
 * Boot's managed versions (relaykit's floors, {@code boot.*}) in the boot-versions run.
 */
class LibraryVersionsTest {

  private static final String PREFIX = "expected.version.";
  private static final Pattern JAR = Pattern.compile(".*/([^/]+)/([^/]+)/\\1-\\2\\.jar");
  /** A jar the boot-versions run copies flat into target/boot-versions: artifactId-version.jar. */
  private static final Pattern COPIED = Pattern.compile(
      ".*/boot-versions/([A-Za-z][A-Za-z0-9_.]*(?:-[A-Za-z][A-Za-z0-9_.]*)*)-(\\d[^/]*)\\.jar");

  @Test
  @DisplayName("kafka-clients, amqp-client, HikariCP, PostgreSQL, H2, SLF4J and Lettuce are at"
      + " the versions the pom names for this run")
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
      String path = entry.replace(File.separatorChar, '/');
      Matcher m = JAR.matcher(path);
      if (!m.matches()) {
        m = COPIED.matcher(path);
      }
      if (m.matches() && expected.containsKey(m.group(1))) {
        onClassPath.put(m.group(1), m.group(2));
      }
    }
    assertThat(onClassPath).as("versions on the test class path").isEqualTo(expected);
  }
}

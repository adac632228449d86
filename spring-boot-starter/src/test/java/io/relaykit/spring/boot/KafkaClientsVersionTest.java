package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Under Spring Boot's BOM (imported by the starter's POM; Boot 4.0.7 pins Kafka 4.1.2), the
 * starter's tests run with relaykit's Kafka, 4.3.1, on every Kafka jar: kafka-clients, which the
 * application gets, and the broker-side jars of the in-JVM test broker.
 */
class KafkaClientsVersionTest {

  /** relaykit's Kafka version: the parent's {@code kafka.version}. */
  static final String RELAYKIT_KAFKA = "4.3.1";

  private static final Pattern KAFKA_JAR =
      Pattern.compile(".*/org/apache/kafka/([^/]+)/([^/]+)/[^/]+\\.jar");

  @Test
  @DisplayName("kafka-clients reports relaykit's version at run time")
  void kafkaClientsIsRelaykitsVersion() {
    assertThat(AppInfoParser.getVersion())
        .as("kafka-clients on the test class path; Boot's BOM pins an older one unless"
            + " org.apache.kafka artifacts are managed before it (README, Spring Boot)")
        .isEqualTo(RELAYKIT_KAFKA);
  }

  @Test
  @DisplayName("every org.apache.kafka jar on the class path has relaykit's version")
  void everyKafkaJarIsRelaykitsVersion() {
    List<String> kafkaJars = new ArrayList<>();
    List<String> others = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Matcher m = KAFKA_JAR.matcher(entry.replace(File.separatorChar, '/'));
      if (m.matches()) {
        kafkaJars.add(m.group(1));
        if (!m.group(2).equals(RELAYKIT_KAFKA)) {
          others.add(m.group(1) + ":" + m.group(2));
        }
      }
    }
    assertThat(kafkaJars).contains("kafka-clients", "kafka-server", "kafka-metadata");
    assertThat(others).as("Kafka jars of another version than %s", RELAYKIT_KAFKA).isEmpty();
  }
}

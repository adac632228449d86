package io.relaykit.examples.bootapp;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.impl.ClientVersion;
import io.relaykit.internal.ClientVersions;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * This application runs on the versions Spring Boot 4.0.7 manages, not relaykit's pins: what the
 * delivery tests prove relaykit works on (and relaykit's floors).
 */
class ManagedVersionsTest {

  @Test
  @DisplayName("kafka-clients, amqp-client, HikariCP, PostgreSQL JDBC and H2 are Boot's")
  void bootsVersions() {
    assertThat(AppInfoParser.getVersion()).isEqualTo("4.1.2");
    assertThat(ClientVersion.VERSION).isEqualTo("5.27.1");
    assertThat(ClientVersions.ofJar(com.zaxxer.hikari.HikariDataSource.class)).contains("7.0.2");
    assertThat(ClientVersions.ofJar(org.postgresql.Driver.class)).contains("42.7.11");
    assertThat(ClientVersions.ofJar(org.h2.Driver.class)).contains("2.4.240");
  }
}

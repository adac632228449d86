package io.relaykit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ClientVersionsTest {

  @Test
  @DisplayName("versions compare by major, minor and patch; suffixes are ignored")
  void compares() {
    assertThat(ClientVersions.compare("4.1.2", "4.2.0")).isNegative();
    assertThat(ClientVersions.compare("4.10.0", "4.9.9")).isPositive();
    assertThat(ClientVersions.compare("6.8.2.RELEASE", "6.8.2")).isZero();
    assertThat(ClientVersions.compare("42.7", "42.7.0")).isZero();
    assertThat(ClientVersions.compare("2.4.240", "2.3.232")).isPositive();
    assertThatThrownBy(() -> ClientVersions.compare("latest", "1.0"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("latest");
  }

  @Test
  @DisplayName("an older client fails with one line naming the library, the version and the floor")
  void refusesOlder() {
    assertThatThrownBy(() -> ClientVersions.require("relaykit-kafka", "kafka-clients", "4.1.2",
        "4.2.0", "share groups"))
        .isInstanceOf(ClientVersionException.class)
        .hasMessage("relaykit-kafka (share groups) needs kafka-clients 4.2.0 or newer, but"
            + " kafka-clients 4.1.2 is on the class path; upgrade kafka-clients to 4.2.0 or newer")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    assertThatCode(() -> ClientVersions.require("m", "lib", "4.2.0", "4.2.0", null))
        .doesNotThrowAnyException();
    assertThatCode(() -> ClientVersions.require("m", "lib", null, "4.2.0", null))
        .as("an unknown version is not refused").doesNotThrowAnyException();
    assertThatCode(() -> ClientVersions.require("m", "lib", "unknown", "4.2.0", null))
        .doesNotThrowAnyException();
  }

  @Test
  @DisplayName("the version of a jar is read from its manifest; classes outside a jar have none")
  void readsJarManifest() {
    assertThat(ClientVersions.ofJar(org.junit.jupiter.api.Test.class)).isPresent()
        .hasValueSatisfying(v -> assertThat(v).matches("\\d+\\.\\d+.*"));
    assertThat(ClientVersions.ofJar(ClientVersionsTest.class)).isEmpty();
  }
}

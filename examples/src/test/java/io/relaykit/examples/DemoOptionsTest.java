package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class DemoOptionsTest {

  @Test
  @DisplayName("the defaults are loopback:8080, ./data, h2, memory, no failures, 5 s lease")
  void defaults() {
    DemoOptions o = DemoOptions.parse();
    assertThat(o).isEqualTo(DemoOptions.defaults());
    assertThat(o.host()).isEqualTo("127.0.0.1");
    assertThat(o.port()).isEqualTo(8080);
    assertThat(o.dataDir()).isEqualTo(Path.of("data"));
    assertThat(o.storage()).isEqualTo("h2");
    assertThat(o.transport()).isEqualTo("memory");
    assertThat(o.failRate()).isZero();
    assertThat(o.poisonSku()).isNull();
    assertThat(o.lease()).isEqualTo(Duration.ofSeconds(5));
    assertThat(o.namespace()).isEmpty();
  }

  @Test
  @DisplayName("every option is read")
  void parsesEveryOption() {
    DemoOptions o = DemoOptions.parse("--host", "0.0.0.0", "--port", "0", "--data", "/tmp/x",
        "--storage", "POSTGRES", "--transport", "RabbitMQ", "--fail-rate", "0.25",
        "--poison-sku", "BAD", "--lease", "2", "--namespace", "demo-1");
    assertThat(o).isEqualTo(new DemoOptions("0.0.0.0", 0, Path.of("/tmp/x"), "postgres",
        "rabbitmq", 0.25, "BAD", Duration.ofSeconds(2), "demo-1"));
  }

  @Test
  @DisplayName("an unknown option is named, with the known ones")
  void unknownOption() {
    assertThatThrownBy(() -> DemoOptions.parse("--prot", "80"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown option --prot").hasMessageContaining("--port");
  }

  @Test
  @DisplayName("an option without its value is named")
  void missingValue() {
    assertThatThrownBy(() -> DemoOptions.parse("--port"))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("--port needs a value");
  }

  @Test
  @DisplayName("a port that is not a number or out of range is named with its value")
  void badPort() {
    assertThatThrownBy(() -> DemoOptions.parse("--port", "http"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--port must be a whole number, was 'http'");
    assertThatThrownBy(() -> DemoOptions.parse("--port", "70000"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--port must be in 0..65535, was 70000");
    assertThatThrownBy(() -> DemoOptions.parse("--port", "-1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--port must be in 0..65535, was -1");
  }

  @Test
  @DisplayName("a fail rate outside [0, 1) or not a number is refused")
  void badFailRate() {
    assertThatThrownBy(() -> DemoOptions.parse("--fail-rate", "1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--fail-rate must be in [0, 1), was 1.0");
    assertThatThrownBy(() -> DemoOptions.parse("--fail-rate", "-0.1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--fail-rate must be in [0, 1), was -0.1");
    assertThatThrownBy(() -> DemoOptions.parse("--fail-rate", "NaN"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--fail-rate must be in [0, 1), was NaN");
    assertThatThrownBy(() -> DemoOptions.parse("--fail-rate", "often"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--fail-rate must be a number, was 'often'");
  }

  @Test
  @DisplayName("an unknown storage or transport names the known ones")
  void unknownBackends() {
    assertThatThrownBy(() -> DemoOptions.parse("--storage", "mongo"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--storage must be one of [h2, postgres, redis], was 'mongo'");
    assertThatThrownBy(() -> DemoOptions.parse("--transport", "smoke-signals"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--transport must be one of [memory, kafka, rabbitmq], was 'smoke-signals'");
  }

  @Test
  @DisplayName("a blank host or poison SKU and a lease that is not positive are refused")
  void blankOrNonPositive() {
    assertThatThrownBy(() -> DemoOptions.parse("--host", " "))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("--host must not be blank");
    assertThatThrownBy(() -> DemoOptions.parse("--poison-sku", ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--poison-sku must not be blank");
    assertThatThrownBy(() -> DemoOptions.parse("--lease", "0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--lease must be a positive number of seconds, was 0");
    assertThatThrownBy(() -> DemoOptions.parse("--lease", "soon"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--lease must be a whole number, was 'soon'");
  }

  @Test
  @DisplayName("a namespace with characters a broker name cannot hold, or too long, is refused")
  void badNamespace() {
    assertThatThrownBy(() -> DemoOptions.parse("--namespace", "a b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--namespace may hold at most 64 letters, digits and . _ : -, was 'a b'");
    assertThatThrownBy(() -> DemoOptions.parse("--namespace", "x".repeat(65)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("--namespace may hold at most 64");
  }
}

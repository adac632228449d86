package io.relaykit.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.internal.Secrets;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every form of secret the reviewer found leaking stays hidden in toString, masked() and errors. */
class SecretMaskingTest {

  private static final ConfigRegistry REGISTRY = ConfigRegistry.of(new SampleKeys(),
      new ConfigKeys() {
        @Override
        public String module() {
          return "relaykit-kafka-sample";
        }

        @Override
        public List<String> namespaces() {
          return List.of("relaykit.kafka");
        }

        @Override
        public List<ConfigKey> keys() {
          return List.of(ConfigKey.family("relaykit.kafka.producer", "producer"),
              ConfigKey.family("relaykit.kafka.consumer", "consumer"),
              ConfigKey.family("relaykit.kafka.admin", "admin"));
        }
      });

  private static Settings settings(String key, String value) {
    return Settings.builder().registry(REGISTRY).set(key, value).build();
  }

  /** The message of {@code t} and of every cause, joined. */
  private static String chain(Throwable t) {
    StringBuilder sb = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      sb.append(c).append('\n');
    }
    return sb.toString();
  }

  @ParameterizedTest(name = "{0} hides {1}")
  @DisplayName("URI user info and password parameters are masked everywhere")
  @CsvSource(delimiter = '|', value = {
      "redis://s3cret@host:6379                       | s3cret  | ****@host:6379",
      "redis://user:p@ss@host                         | p@ss    | redis://user:****@host",
      "redis://user:p@ss@host                         | @ss@    | redis://user:****@host",
      "redis://:ab/cd@host                            | ab/cd   | redis://:****@host",
      "amqp://u:p/w@h                                 | p/w     | amqp://u:****@h",
      "redis://user:pa ss@host:6379                   | pa ss   | user:****@host:6379",
      "redis://u:pw1@h1:7000,redis://u:pw2@h2:7000    | pw2     | u:****@h1:7000,redis://u:****@h2",
      "jdbc:postgresql://h/db?user=u&password=hunter2 | hunter2 | ?user=u&password=****",
      "jdbc:h2:mem:t;USER=sa;PASSWORD=h2pass;MODE=x   | h2pass  | ;PASSWORD=****;MODE=x",
      "https://h/x?token=tok123&a=1                   | tok123  | token=****&a=1",
  })
  void values(String value, String secret, String shown) {
    assertThat(Secrets.mask(value)).doesNotContain(secret).contains(shown);
    Settings s = settings("relaykit.sample.uri", value);
    assertThat(s.masked("relaykit.sample.uri", value)).doesNotContain(secret).contains(shown);
    assertThat(s.toString()).doesNotContain(secret).contains(shown);

    assertThatThrownBy(() -> settings("relaykit.sample.pool-size", value).getInt(
        "relaykit.sample.pool-size", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> assertThat(chain(e)).contains("relaykit.sample.pool-size")
            .doesNotContain(secret));
  }

  @ParameterizedTest(name = "{0}")
  @DisplayName("pass-through client keys naming a credential are secret")
  @CsvSource(delimiter = '|', value = {
      "relaykit.kafka.producer.sasl.jaas.config | x.PlainLoginModule required username=\"u\" "
          + "password=\"jaaspw\"; | jaaspw",
      "relaykit.kafka.consumer.ssl.keystore.key | keymaterial123 | keymaterial123",
      "relaykit.kafka.admin.basic.auth.user.info | u:infopw | infopw",
      "relaykit.kafka.producer.ssl.key.password | kpw123 | kpw123",
      "relaykit.kafka.consumer.sasl.oauthbearer.token.endpoint.url | https://idp/tok | idp",
  })
  void passThroughKeys(String key, String value, String secret) {
    Settings s = settings(key, value);
    assertThat(s.isSecret(key)).isTrue();
    assertThat(s.masked(key, value)).isEqualTo("****");
    assertThat(s.toString()).doesNotContain(secret).contains(key + "=****");
  }

  @Test
  @DisplayName("what is not secret stays readable")
  void plainStaysReadable() {
    Settings s = settings("relaykit.kafka.producer.acks", "all");
    assertThat(s.isSecret("relaykit.kafka.producer.acks")).isFalse();
    assertThat(s.toString()).contains("relaykit.kafka.producer.acks=all");
    assertThat(Secrets.mask("redis://127.0.0.1:6379/0")).isEqualTo("redis://127.0.0.1:6379/0");
    assertThat(Secrets.mask("jdbc:postgresql://h/db?user=u")).isEqualTo(
        "jdbc:postgresql://h/db?user=u");
    assertThat(Secrets.mask(null)).isEqualTo("null");
    assertThat(Secrets.isSecretKey("relaykit.sample.uri")).isFalse();
  }
}

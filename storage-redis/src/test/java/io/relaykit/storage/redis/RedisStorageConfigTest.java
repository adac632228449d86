package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedisStorageConfig")
class RedisStorageConfigTest {

  @Test
  @DisplayName("defaults are pinned")
  void defaults() {
    RedisStorageConfig c = RedisStorageConfig.builder().build();
    assertThat(c.uri()).isEqualTo("redis://127.0.0.1:6379");
    assertThat(c.commandTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.connectTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.reconnectMaxDelay()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.keyPrefix()).isEqualTo("relaykit:");
    assertThat(c.lease()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.retention()).isEqualTo(Duration.ofDays(7));
    assertThat(c.maxValueBytes()).isEqualTo(8 * 1024 * 1024);
    assertThat(c.readLegacyIdempotencyKeys()).isFalse();
    assertThat(c.toBuilder().build()).isEqualTo(c).hasSameHashCodeAs(c);
    RedisStorageConfig legacy = c.toBuilder().readLegacyIdempotencyKeys(true).build();
    assertThat(legacy).isNotEqualTo(c);
    assertThat(legacy.toBuilder().build().readLegacyIdempotencyKeys()).isTrue();
  }

  @Test
  @DisplayName("every invalid value is rejected naming the field and the value")
  void invalid() {
    assertInvalid(RedisStorageConfig.builder().uri(" "), "uri");
    assertInvalid(RedisStorageConfig.builder().uri("http://host"), "uri", "http://host");
    assertInvalid(RedisStorageConfig.builder().commandTimeout(Duration.ZERO), "commandTimeout",
        "PT0S");
    assertInvalid(RedisStorageConfig.builder().connectTimeout(null), "connectTimeout", "null");
    assertInvalid(RedisStorageConfig.builder().reconnectMaxDelay(Duration.ofSeconds(-1)),
        "reconnectMaxDelay", "PT-1S");
    assertInvalid(RedisStorageConfig.builder().lease(Duration.ofNanos(5)), "lease", "PT0.000000005S");
    assertInvalid(RedisStorageConfig.builder().retention(Duration.ZERO), "retention");
    assertInvalid(RedisStorageConfig.builder().keyPrefix(""), "keyPrefix");
    assertInvalid(RedisStorageConfig.builder().keyPrefix("app{1}:"), "keyPrefix", "app{1}:");
    assertInvalid(RedisStorageConfig.builder().keyPrefix("a b"), "keyPrefix", "a b");
    assertInvalid(RedisStorageConfig.builder().keyPrefix("p".repeat(129)), "keyPrefix", "129");
    assertInvalid(RedisStorageConfig.builder().maxValueBytes(1023), "maxValueBytes", "1023");
    assertInvalid(RedisStorageConfig.builder().uri("redis://a:1,redis://b:2"), "uri", "cluster");
    assertInvalid(RedisStorageConfig.builder().cluster(true).uri("redis://a:1,,redis://b:2"),
        "uri");
    assertInvalid(RedisStorageConfig.builder().cluster(true).uri("redis://a:1,http://b"), "uri");
  }

  @Test
  @DisplayName("a cluster takes comma-separated seeds; it is off by default")
  void cluster() {
    assertThat(RedisStorageConfig.builder().build().cluster()).isFalse();
    RedisStorageConfig c = RedisStorageConfig.builder().cluster(true)
        .uri("redis://u:s3cret@10.0.0.1:7000, redis://u:s3cret@10.0.0.2:7000").build();
    assertThat(c.cluster()).isTrue();
    assertThat(c.uris()).containsExactly("redis://u:s3cret@10.0.0.1:7000",
        "redis://u:s3cret@10.0.0.2:7000");
    assertThat(c.toString()).doesNotContain("s3cret").contains("cluster=true");
    assertThat(c.toBuilder().build()).isEqualTo(c);
  }

  @Test
  @DisplayName("the password in the URI is not printed")
  void redacted() {
    RedisStorageConfig c = RedisStorageConfig.builder()
        .uri("redis://app:s3cret@127.0.0.1:6379/0").build();
    assertThat(c.toString()).doesNotContain("s3cret").contains("app:****@127.0.0.1:6379/0");
    assertThatThrownBy(() -> RedisStorageConfig.builder().uri("rediss://u:s3cret@").build())
        .isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret"));
  }

  @org.junit.jupiter.params.ParameterizedTest
  @DisplayName("an invalid URI never shows or chains its password")
  @org.junit.jupiter.params.provider.ValueSource(strings = {
      "redis://user:pa ss@host:6379", "redis://user:pa%zzss@host:6379", "redis://pa ss@host:6379",
      "redis://user:pa ss@host:6379,redis://user:pa ss@h2:6379"})
  void invalidUriHidesPassword(String uri) {
    for (boolean cluster : new boolean[] {false, true}) {
      assertThatThrownBy(() -> RedisStorageConfig.builder().cluster(cluster).uri(uri).build())
          .isInstanceOf(IllegalArgumentException.class)
          .satisfies(e -> {
            StringBuilder all = new StringBuilder();
            for (Throwable c = e; c != null; c = c.getCause()) {
              all.append(c).append('\n');
            }
            assertThat(all.toString()).contains("uri").doesNotContain("pa ss")
                .doesNotContain("pa%zzss").doesNotContain("ss@");
          });
    }
    assertThatThrownBy(() -> RedisStorageConfig.from(io.relaykit.config.Settings.builder()
        .set(RedisConfigKeys.URI, uri).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> {
          for (Throwable c = e; c != null; c = c.getCause()) {
            assertThat(String.valueOf(c)).doesNotContain("pa ss").doesNotContain("pa%zzss");
          }
        });
  }

  private static void assertInvalid(RedisStorageConfig.Builder b, String... parts) {
    assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> {
          for (String part : parts) {
            assertThat(e.getMessage()).contains(part);
          }
        });
  }
}

package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("the Redis tests' own setup")
class RedisTestSupportTest {

  @Test
  @DisplayName("with Redis down, a test fails naming Redis, where, and how to start it")
  void downFailsClearly() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    String uri = "redis://127.0.0.1:" + port;
    assertThatThrownBy(() -> new RedisTestSupport(uri))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("Redis is not reachable at " + uri)
        .hasMessageContaining("redis-server --daemonize yes")
        .hasMessageContaining("RELAYKIT_REDIS_URI");
  }

  @Test
  @DisplayName("cleanup deletes every key under the test prefix and nothing else")
  void cleanup() {
    RedisTestSupport support = new RedisTestSupport();
    RedisTestSupport other = new RedisTestSupport();
    try {
      support.raw().set(support.prefix + "a", "1");
      support.raw().hset(support.prefix + "b", "f", "v");
      other.raw().set(other.prefix + "keep", "1");
      assertThat(support.keys()).hasSize(2);
      support.close();
      assertThat(other.raw().exists(support.prefix + "a", support.prefix + "b")).isZero();
      assertThat(other.raw().get(other.prefix + "keep")).isEqualTo("1");
    } finally {
      other.close();
    }
  }
}

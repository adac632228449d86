package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.MissedHeartbeatException;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.relaykit.config.Settings;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The requested heartbeat: the default reaches the broker, and a connection whose path is
 * blackholed (bytes accepted, nothing forwarded, no reset) is noticed by missed heartbeats while
 * the blackhole lasts, then recovered once the path carries bytes again.
 */
class RabbitMqHeartbeatDetectionTest {

  private FaultProxy proxy;
  private Connection connection;

  @AfterEach
  void tearDown() {
    if (connection != null) {
      connection.abort(2_000);
    }
    if (proxy != null) {
      proxy.close();
    }
  }

  @Test
  @DisplayName("relaykit.rabbitmq.heartbeat is read; less than a second, fractions and more than"
      + " 65535 s are rejected naming the key")
  void heartbeatKey() {
    assertThat(RabbitMqTransportConfig.from(Settings.builder()
        .set(RabbitMqConfigKeys.HEARTBEAT, "5s").build()).heartbeat())
        .isEqualTo(Duration.ofSeconds(5));
    for (String bad : new String[] {"0s", "500ms", "1500ms", "65536s"}) {
      assertThatThrownBy(() -> RabbitMqTransportConfig.from(Settings.builder()
          .set(RabbitMqConfigKeys.HEARTBEAT, bad).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.rabbitmq").hasMessageContaining("heartbeat");
    }
  }

  @Test
  @DisplayName("by default a connection runs with a heartbeat of at most 10 s (not 60 s)")
  void defaultHeartbeatIsNegotiated() throws Exception {
    RabbitMqTransportConfig config = TestBroker.config().build();
    assertThat(config.heartbeat()).isEqualTo(Duration.ofSeconds(10));
    connection = Connections.open(config, "heartbeat", false);
    assertThat(connection.getHeartbeat()).isBetween(1, 10);
  }

  @Test
  @DisplayName("a blackholed connection is noticed within 3 heartbeats + 2 s, before any heal,"
      + " and recovered soon after the path carries bytes again")
  void blackholeDetectedByHeartbeat() throws Exception {
    Duration heartbeat = Duration.ofSeconds(2);
    RabbitMqTransportConfig direct = TestBroker.config().heartbeat(heartbeat).build();
    URI broker = URI.create(direct.uri());
    proxy = FaultProxy.to(broker.getHost(), broker.getPort());
    RabbitMqTransportConfig config = direct.toBuilder()
        .uri(broker.getScheme() + "://" + broker.getRawUserInfo() + "@" + proxy.address()
            + (broker.getRawPath() == null ? "" : broker.getRawPath()))
        .build();
    connection = Connections.openRecovering(config, "heartbeat", new AtomicLong());
    assertThat(connection.getHeartbeat()).isEqualTo(2);
    AtomicReference<ShutdownSignalException> lost = new AtomicReference<>();
    AtomicLong lostAt = new AtomicLong();
    AtomicLong recoveredAt = new AtomicLong();
    connection.addShutdownListener(cause -> {
      lostAt.compareAndSet(0, System.nanoTime());
      lost.compareAndSet(null, cause);
    });
    ((Recoverable) connection).addRecoveryListener(new RecoveryListener() {
      @Override
      public void handleRecovery(Recoverable recoverable) {
        recoveredAt.compareAndSet(0, System.nanoTime());
      }

      @Override
      public void handleRecoveryStarted(Recoverable recoverable) {
        // the shutdown listener has the moment
      }
    });

    long start = System.nanoTime();
    proxy.blackhole();
    // amqp-client gives up after about two periods without a frame (2 to 2.25 x heartbeat).
    Duration bound = heartbeat.multipliedBy(3).plusSeconds(2);
    Await.until(bound, "the blackholed connection noticed by its heartbeat",
        () -> lost.get() != null);
    assertThat(lost.get().isInitiatedByApplication()).isFalse();
    assertThat(lost.get().getCause()).isInstanceOf(MissedHeartbeatException.class);
    assertThat(Duration.ofNanos(lostAt.get() - start)).isLessThan(bound)
        .isGreaterThanOrEqualTo(heartbeat);

    // A blackholed route also swallows the reconnects (the proxy's blackhole holds new
    // connections too), so the connection comes back once the path does: within the handshake
    // timeout of an attempt begun during the blackhole plus the recovery interval.
    long healed = System.nanoTime();
    proxy.heal();
    Await.until(Duration.ofSeconds(15), "the connection recovered after the heal",
        () -> recoveredAt.get() != 0);
    assertThat(connection.isOpen()).isTrue();
    assertThat(Duration.ofNanos(recoveredAt.get() - healed)).isLessThan(Duration.ofSeconds(15));
    connection.createChannel().close();
  }
}

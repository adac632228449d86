package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The real RabbitMQ the tests run against ({@code RELAYKIT_RABBITMQ_URI} or 127.0.0.1:5672), with
 * unique names per test and a way to force-close a connection the way an operator would.
 */
final class TestBroker {
  private TestBroker() {}

  /** A unique name with {@code base} in it, so parallel test runs never share an entity. */
  static String unique(String base) {
    return "rk-test-" + base + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A config for tests: unique connection name, short timeouts and delays. */
  static RabbitMqTransportConfig.Builder config() {
    return RabbitMqTransportConfig.builder()
        .connectionName(unique("conn"))
        .confirmTimeout(Duration.ofSeconds(20))
        .closeTimeout(Duration.ofSeconds(10))
        .recoveryInterval(Duration.ofMillis(200))
        .delayLevels(Duration.ofMillis(200), Duration.ofMillis(600), Duration.ofSeconds(30));
  }

  /** An admin connection; fails with a message naming RabbitMQ and how to start it. */
  static Connection connect(RabbitMqTransportConfig config) {
    try {
      return Connections.open(config, "test-admin", false);
    } catch (IOException e) {
      throw new AssertionError(e.getMessage(), e);
    }
  }

  /**
   * Takes every message of {@code queue}, acking them. Consumes rather than polls: one basic.get
   * per message is a broker round trip (slow on a quorum queue).
   */
  static List<GetResponse> drain(Connection c, String queue) {
    long expected = depth(c, queue);
    List<GetResponse> out = java.util.Collections.synchronizedList(new ArrayList<>());
    if (expected == 0) {
      return out;
    }
    try (Channel ch = c.createChannel()) {
      ch.basicQos(1000);
      String tag = ch.basicConsume(queue, true, (t, d) -> out.add(new GetResponse(
          d.getEnvelope(), d.getProperties(), d.getBody(), 0)), t -> { });
      io.relaykit.tck.Await.until(Duration.ofSeconds(30), expected + " messages from " + queue,
          () -> out.size() >= expected);
      ch.basicCancel(tag);
    } catch (java.io.IOException | java.util.concurrent.TimeoutException e) {
      throw new AssertionError("could not drain " + queue + ": " + e, e);
    }
    return new ArrayList<>(out);
  }

  static long depth(Connection c, String queue) {
    try (Channel ch = c.createChannel()) {
      return ch.queueDeclarePassive(queue).getMessageCount();
    } catch (Exception e) {
      throw new AssertionError("could not read the depth of " + queue + ": " + e, e);
    }
  }

  static String header(GetResponse r, String name) {
    Object v = r.getProps().getHeaders() == null ? null : r.getProps().getHeaders().get(name);
    return v == null ? null : v.toString();
  }

  static String body(GetResponse r) {
    return new String(r.getBody(), StandardCharsets.UTF_8);
  }

  /**
   * Force-closes every broker connection whose client-provided name is {@code connectionName},
   * with {@code rabbitmqctl close_connection}, as an operator or a broker restart would. Only the
   * named connections: other test runs on the same broker are not disturbed.
   *
   * @return how many connections were closed
   */
  static int forceClose(String connectionName) {
    List<String> pids = connectionPids(connectionName);
    forceClose(pids);
    return pids.size();
  }

  /** The broker's process ids of the connections named {@code connectionName}. */
  static List<String> connectionPids(String connectionName) {
    List<String> pids = new ArrayList<>();
    for (String line : rabbitmqctl("list_connections", "pid", "client_properties").split("\n")) {
      if (line.contains("\"" + connectionName + "\"") && line.startsWith("<")) {
        pids.add(line.substring(0, line.indexOf('\t')));
      }
    }
    return pids;
  }

  static void forceClose(List<String> pids) {
    for (String pid : pids) {
      rabbitmqctl("close_connection", pid, "relaykit test: forced close");
    }
  }

  static String rabbitmqctl(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add("rabbitmqctl");
    cmd.add("-q");
    cmd.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new AssertionError("rabbitmqctl " + String.join(" ", args) + " failed: " + out
            + " (is RabbitMQ running? start it with `rabbitmq-server -detached`)");
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("rabbitmqctl is not available", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted running rabbitmqctl", e);
    }
  }
}

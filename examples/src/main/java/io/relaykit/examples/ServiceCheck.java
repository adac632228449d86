package io.relaykit.examples;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Before the demo wires a client library to a service, checks that something accepts TCP
 * connections at the service's address, so a service that is down is reported in one line (which
 * service, which address, which variable configures it, how to start one) instead of a client's
 * reconnect log and a stack trace. Costs one connect per service, at most {@link #TIMEOUT} each.
 */
final class ServiceCheck {
  static final Duration TIMEOUT = Duration.ofSeconds(3);
  private static final Pattern JDBC_POSTGRES =
      Pattern.compile("jdbc:postgresql://([^/:?,\\[\\]]+)(?::(\\d+))?(?:[/?].*)?");

  private ServiceCheck() {}

  /** Whether something accepts a TCP connection at {@code host:port} within {@link #TIMEOUT}. */
  static boolean listening(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), (int) TIMEOUT.toMillis());
      return true;
    } catch (IOException | IllegalArgumentException e) {
      return false;
    }
  }

  /** PostgreSQL at a {@code jdbc:postgresql://host[:port]/...} URL; other URLs are not checked. */
  static void postgres(String jdbcUrl, String variable) {
    Matcher m = JDBC_POSTGRES.matcher(jdbcUrl);
    if (!m.matches()) {
      return;
    }
    String host = m.group(1);
    int port = m.group(2) == null ? 5432 : Integer.parseInt(m.group(2));
    require("PostgreSQL", host, port, variable, "start it (./relaykit test starts PostgreSQL,"
        + " Redis and RabbitMQ; or apt-get install postgresql)");
  }

  /** Redis at a {@code redis://} or {@code rediss://} URI. */
  static void redis(String uri, String variable) {
    uri(uri, "Redis", 6379, variable, "start it (./relaykit test starts it; or apt-get install"
        + " redis-server)");
  }

  /** RabbitMQ at an {@code amqp://} or {@code amqps://} URI. */
  static void rabbitmq(String uri, String variable) {
    uri(uri, "RabbitMQ", uri.startsWith("amqps:") ? 5671 : 5672, variable, "start it"
        + " (./relaykit test starts it; or apt-get install rabbitmq-server)");
  }

  private static void uri(String text, String service, int defaultPort, String variable,
      String howTo) {
    URI uri;
    try {
      uri = URI.create(text);
    } catch (IllegalArgumentException e) {
      return;
    }
    if (uri.getHost() == null) {
      return;
    }
    require(service, uri.getHost(), uri.getPort() < 0 ? defaultPort : uri.getPort(), variable,
        howTo);
  }

  private static void require(String service, String host, int port, String variable,
      String howTo) {
    if (!listening(host, port)) {
      throw new DemoStartupException(service + " does not answer at " + host + ":" + port + " ("
          + variable + "); " + howTo + ", or point " + variable + " at a running one");
    }
  }
}

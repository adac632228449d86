package io.relaykit.examples.kafka;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Asks a Kafka broker whether it serves requests, with one ApiVersions request (version 0) on a
 * plain socket: no client library, so nothing logs and nothing reconnects in the background.
 *
 * <p>A KRaft broker binds its port early but processes requests only once it has caught up with
 * the metadata log and been unfenced, so an answer means it can take produce and fetch requests;
 * a bare TCP connect would succeed earlier. Costs one connection and a few bytes each way.
 */
public final class KafkaPing {
  private static final short API_VERSIONS = 18;

  private KafkaPing() {}

  /**
   * Whether a Kafka broker at {@code host:port} answers an ApiVersions request within {@code
   * timeout} (connect plus answer). Any answer counts, even an error code: it is a Kafka broker
   * processing requests. Never throws for a broker that is down; returns false.
   */
  public static boolean answers(String host, int port, Duration timeout) {
    int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), millis);
      s.setSoTimeout(millis);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      byte[] clientId = "relaykit-ping".getBytes(StandardCharsets.US_ASCII);
      int correlationId = 0x52_4B_00_01;
      out.writeInt(2 + 2 + 4 + 2 + clientId.length);
      out.writeShort(API_VERSIONS);
      out.writeShort(0);
      out.writeInt(correlationId);
      out.writeShort(clientId.length);
      out.write(clientId);
      out.flush();
      DataInputStream in = new DataInputStream(s.getInputStream());
      int size = in.readInt();
      return size >= 4 && in.readInt() == correlationId;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * The {@code host:port} pairs of a {@code bootstrap.servers} list ({@code a:9092,b:9093}).
   *
   * @throws IllegalArgumentException naming an entry that is not {@code host:port}
   */
  public static List<InetSocketAddress> parseBootstrap(String bootstrap) {
    List<InetSocketAddress> out = new ArrayList<>();
    if (bootstrap == null || bootstrap.isBlank()) {
      throw new IllegalArgumentException("the Kafka bootstrap servers list is empty");
    }
    for (String entry : bootstrap.split(",")) {
      String e = entry.trim();
      int colon = e.lastIndexOf(':');
      if (colon <= 0 || colon == e.length() - 1) {
        throw new IllegalArgumentException("Kafka bootstrap server '" + e
            + "' is not host:port");
      }
      String host = e.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      int port;
      try {
        port = Integer.parseInt(e.substring(colon + 1));
      } catch (NumberFormatException x) {
        throw new IllegalArgumentException("Kafka bootstrap server '" + e
            + "' has no numeric port", x);
      }
      if (port < 1 || port > 65_535) {
        throw new IllegalArgumentException("Kafka bootstrap server '" + e
            + "' has a port outside 1..65535");
      }
      out.add(InetSocketAddress.createUnresolved(host, port));
    }
    return out;
  }

  /** Whether any broker of a {@code bootstrap.servers} list answers within {@code timeout} each. */
  public static boolean anyAnswers(String bootstrap, Duration timeout) {
    for (InetSocketAddress a : parseBootstrap(bootstrap)) {
      if (answers(a.getHostString(), a.getPort(), timeout)) {
        return true;
      }
    }
    return false;
  }
}

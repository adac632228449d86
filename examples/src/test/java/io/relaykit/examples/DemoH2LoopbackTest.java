package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's H2 file opens two listening sockets in the demo's process: the lock socket of {@code
 * FILE_LOCK=SOCKET} and the TCP server of {@code AUTO_SERVER}. Both listen on 127.0.0.1 only
 * (the demo's launcher sets {@code h2.bindAddress}). Linux: the listeners are read from {@code
 * /proc/net/tcp} and {@code /proc/net/tcp6}.
 */
class DemoH2LoopbackTest {

  @TempDir
  Path data;

  /** The local addresses (hex, as /proc/net prints them) listening on {@code port}. */
  private static List<String> listeners(int port) throws IOException {
    List<String> out = new ArrayList<>();
    String hexPort = String.format("%04X", port);
    for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      Path p = Path.of(table);
      if (!Files.exists(p)) {
        continue;
      }
      for (String line : Files.readAllLines(p)) {
        String[] f = line.trim().split("\\s+");
        // "sl local_address rem_address st ...": st 0A is LISTEN.
        if (f.length > 3 && f[1].endsWith(":" + hexPort) && f[3].equals("0A")) {
          out.add(f[1].substring(0, f[1].indexOf(':')));
        }
      }
    }
    return out;
  }

  /** 127.0.0.1 as an IPv4 entry or as the IPv4-mapped IPv6 entry of /proc/net/tcp6. */
  private static boolean loopback(String hex) {
    return hex.equals("0100007F") || hex.equals("0000000000000000FFFF00000100007F")
        || hex.equals("00000000000000000000000001000000");
  }

  @Test
  @DisplayName("the demo's H2 lock socket and AUTO_SERVER port listen on 127.0.0.1 only")
  void h2SocketsListenOnLoopbackOnly() throws Exception {
    assertThat(Path.of("/proc/net/tcp")).as("this test reads listeners from /proc/net (Linux)")
        .exists();
    try (DemoProcess demo = DemoProcess.start(Map.of(), "--data", data.toString(), "--storage",
        "h2", "--transport", "memory")) {
      demo.http.placeOrders("loopback", 1);
      Properties lock = new Properties();
      try (InputStream in = Files.newInputStream(data.resolve("relaykit.lock.db"))) {
        lock.load(in);
      }
      assertThat(lock.getProperty("method")).isEqualTo("socket");
      // H2 writes a bind address of 127.0.0.1 as "localhost"; without one, the host's address.
      assertThat(InetAddress.getByName(lock.getProperty("ipAddress")).isLoopbackAddress())
          .as("lock socket address %s is loopback", lock.getProperty("ipAddress")).isTrue();
      String server = lock.getProperty("server");
      assertThat(InetAddress.getByName(server.substring(0, server.lastIndexOf(':')))
          .isLoopbackAddress()).as("AUTO_SERVER address %s is loopback", server).isTrue();
      int lockPort = Integer.parseInt(lock.getProperty("port"));
      int serverPort = Integer.parseInt(server.substring(server.lastIndexOf(':') + 1));
      for (int port : new int[] {lockPort, serverPort}) {
        List<String> addresses = listeners(port);
        assertThat(addresses).as("listeners on port %d", port).isNotEmpty()
            .allSatisfy(a -> assertThat(loopback(a)).as("%s is loopback", a).isTrue());
      }
    }
  }
}

package io.relaykit.examples;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP forwarder on a free loopback port to {@code host:port}, for outage tests against a shared
 * server (Redis) that the test must not stop: {@link #cut()} closes the listening socket and every
 * forwarded connection, so the client sees its server vanish (connections reset, reconnects
 * refused) while the real server goes on serving everyone else. Two threads per connection.
 */
final class CuttableProxy implements AutoCloseable {
  private final InetSocketAddress target;
  private final ServerSocket listener;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private volatile boolean cut;

  CuttableProxy(String host, int port) throws IOException {
    this.target = new InetSocketAddress(host, port);
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "proxy-accept-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The port clients connect to. */
  int port() {
    return listener.getLocalPort();
  }

  private void accept() {
    while (!cut) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return; // cut
      }
      Socket server = new Socket();
      sockets.add(client);
      sockets.add(server);
      try {
        server.connect(target, 5_000);
      } catch (IOException e) {
        closeQuietly(client);
        closeQuietly(server);
        continue;
      }
      if (cut) {
        closeQuietly(client);
        closeQuietly(server);
        return;
      }
      pump(client, server);
      pump(server, client);
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        in.transferTo(out);
      } catch (IOException e) {
        // one side closed or was cut
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  /** The server "goes away": no new connections, and every open one is closed now. */
  void cut() {
    cut = true;
    closeQuietly(listener);
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // closing is all we want
    }
  }

  @Override
  public void close() {
    cut();
  }
}

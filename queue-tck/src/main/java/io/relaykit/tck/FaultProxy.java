package io.relaykit.tck;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A TCP forwarder on loopback that makes network faults on demand, for outage tests against real
 * servers (PostgreSQL, Redis, RabbitMQ, a Kafka broker) that a test must never stop or reconfigure:
 * the client talks to {@link #port()}, the proxy forwards to the real server, and the test breaks
 * the path in between.
 *
 * <p>Faults, each reversible with {@link #heal()}:
 * <ul>
 *   <li>{@link #cutConnections()}: every open connection is reset now (RST); new ones are accepted.
 *   <li>{@link #refuseConnections()}: also stops listening, so connects are refused, as when the
 *       server is down. Combine with {@code cutConnections} for "the server went away".
 *   <li>{@link #blackhole()}: connections are accepted and bytes read, but nothing is forwarded
 *       either way: requests hang until the client's own timeout.
 *   <li>{@link #stopReading()}: the proxy stops reading what clients send, so their socket buffers
 *       fill and writers block, as with a broker under a memory alarm.
 *   <li>{@link #dropReplies()}: requests reach the server, answers never come back: the half
 *       success of a commit whose acknowledgement is lost.
 *   <li>{@link #latency(Duration)}: every chunk is forwarded no sooner than this after it was read
 *       (chunks of one direction are delayed one after the other, so it also caps throughput).
 * </ul>
 * A connection that lost bytes to {@code blackhole} or {@code dropReplies} is reset by {@code heal},
 * since its protocol stream is broken; stalled connections resume where they were.
 *
 * <p>Costs two platform threads per forwarded connection and one for accepting. For tests only.
 */
public final class FaultProxy implements AutoCloseable {

  /** What happens to bytes in one direction. */
  private enum Flow {
    FORWARD, DROP, STALL
  }

  private final InetSocketAddress target;
  private final int port;
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong bytesUp = new AtomicLong();
  private final AtomicLong bytesDown = new AtomicLong();

  // Guarded by lock.
  private Flow up = Flow.FORWARD;
  private Flow down = Flow.FORWARD;
  private long latencyNanos;
  private ServerSocket listener;
  private Thread acceptor;
  private boolean closed;

  private FaultProxy(InetSocketAddress target, int listenPort) throws IOException {
    this.target = target;
    ServerSocket socket = listen(listenPort);
    this.port = socket.getLocalPort();
    lock.lock();
    try {
      this.listener = socket;
    } finally {
      lock.unlock();
    }
    startAcceptor(socket);
  }

  /**
   * A proxy on a free loopback port forwarding to {@code host:port}. It listens and accepts at
   * once; each accepted connection opens its own connection to the target.
   *
   * @param host the real server's host
   * @param port the real server's port, 1..65535
   * @return a running proxy, owned by the caller: close it
   * @throws IllegalArgumentException if the port is out of range or the host is blank
   * @throws UncheckedIOException if no loopback port can be bound
   */
  public static FaultProxy to(String host, int port) {
    return to(host, port, 0);
  }

  /**
   * A proxy on loopback port {@code listenPort} (0: any free port) forwarding to {@code host:port}.
   * A fixed port serves servers that advertise an address to their clients (a Kafka broker's
   * advertised listener).
   *
   * @param host the real server's host
   * @param port the real server's port, 1..65535
   * @param listenPort the loopback port to listen on, 0..65535
   * @return a running proxy, owned by the caller: close it
   * @throws IllegalArgumentException if a port is out of range or the host is blank
   * @throws UncheckedIOException if {@code listenPort} cannot be bound
   */
  public static FaultProxy to(String host, int port, int listenPort) {
    Objects.requireNonNull(host, "host");
    if (host.isBlank()) {
      throw new IllegalArgumentException("host must not be blank");
    }
    if (port < 1 || port > 65_535) {
      throw new IllegalArgumentException("port must be in 1..65535, was " + port);
    }
    if (listenPort < 0 || listenPort > 65_535) {
      throw new IllegalArgumentException("listenPort must be in 0..65535, was " + listenPort);
    }
    try {
      return new FaultProxy(new InetSocketAddress(host, port), listenPort);
    } catch (IOException e) {
      throw new UncheckedIOException("could not listen on loopback port " + listenPort, e);
    }
  }

  /**
   * The loopback port clients connect to; stays the same across {@link #refuseConnections()} and
   * {@link #heal()}.
   *
   * @return the listening port
   */
  public int port() {
    return port;
  }

  /**
   * {@code 127.0.0.1:port}, for connection strings.
   *
   * @return the loopback address and {@link #port()}
   */
  public String address() {
    return InetAddress.getLoopbackAddress().getHostAddress() + ":" + port;
  }

  /** Resets every open connection (RST). New connections are still accepted. */
  public void cutConnections() {
    for (Link link : links) {
      link.close();
    }
  }

  /** Stops listening: new connections are refused until {@link #heal()}. Open ones stay. */
  public void refuseConnections() {
    ServerSocket old;
    Thread oldAcceptor;
    lock.lock();
    try {
      old = listener;
      oldAcceptor = acceptor;
      listener = null;
      acceptor = null;
    } finally {
      lock.unlock();
    }
    closeQuietly(old);
    awaitExit(oldAcceptor);
  }

  /**
   * Waits for an acceptor whose socket was closed. The JDK closes a listening socket that a thread
   * is blocked in accept() on only when that thread has left accept: until then the kernel still
   * completes connects into its backlog. Refusal holds once the acceptor is gone.
   */
  private static void awaitExit(Thread acceptor) {
    if (acceptor == null || acceptor == Thread.currentThread()) {
      return;
    }
    try {
      acceptor.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (acceptor.isAlive()) {
      throw new IllegalStateException("the proxy's acceptor did not stop within 10 s");
    }
  }

  /** Accepts and reads, forwards nothing in either direction, until {@link #heal()}. */
  public void blackhole() {
    setFlows(Flow.DROP, Flow.DROP);
  }

  /** Stops reading what clients send, so writers block once buffers fill, until {@link #heal()}. */
  public void stopReading() {
    setFlows(Flow.STALL, null);
  }

  /** Forwards requests but discards the server's answers, until {@link #heal()}. */
  public void dropReplies() {
    setFlows(null, Flow.DROP);
  }

  /**
   * Forwards each chunk no sooner than {@code latency} after it was read; {@link Duration#ZERO}
   * removes it. Takes effect at once, on open connections too.
   *
   * @param latency the delay of each chunk, zero or positive
   * @throws NullPointerException if {@code latency} is null
   * @throws IllegalArgumentException if negative
   */
  public void latency(Duration latency) {
    Objects.requireNonNull(latency, "latency");
    if (latency.isNegative()) {
      throw new IllegalArgumentException("latency must not be negative, was " + latency);
    }
    lock.lock();
    try {
      latencyNanos = latency.toNanos();
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Undoes every fault: forwards both ways without latency and accepts connections again. Resets
   * the connections that lost bytes while a fault dropped them.
   *
   * @throws UncheckedIOException if the port cannot be bound again
   */
  public void heal() {
    ServerSocket reopened = null;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      up = Flow.FORWARD;
      down = Flow.FORWARD;
      latencyNanos = 0;
      if (listener == null) {
        try {
          reopened = listen(port);
        } catch (IOException e) {
          throw new UncheckedIOException("could not listen on loopback port " + port + " again", e);
        }
        listener = reopened;
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    for (Link link : links) {
      if (link.lostBytes) {
        link.close();
      }
    }
    if (reopened != null) {
      startAcceptor(reopened);
    }
  }

  /**
   * Connections accepted since the proxy started.
   *
   * @return the count, including connections closed since
   */
  public long acceptedConnections() {
    return accepted.get();
  }

  /**
   * Connections open now.
   *
   * @return the number of forwarded connections not yet closed
   */
  public int openConnections() {
    return links.size();
  }

  /**
   * Bytes forwarded from clients to the server.
   *
   * @return the total since the proxy started; dropped bytes are not counted
   */
  public long bytesToServer() {
    return bytesUp.get();
  }

  /**
   * Bytes forwarded from the server to clients.
   *
   * @return the total since the proxy started; dropped bytes are not counted
   */
  public long bytesToClients() {
    return bytesDown.get();
  }

  /** Stops listening and resets every connection. */
  @Override
  public void close() {
    ServerSocket old;
    lock.lock();
    try {
      closed = true;
      old = listener;
      listener = null;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    closeQuietly(old);
    cutConnections();
  }

  @Override
  public String toString() {
    return "FaultProxy[" + address() + " -> " + target.getHostString() + ":" + target.getPort()
        + "]";
  }

  private void setFlows(Flow newUp, Flow newDown) {
    lock.lock();
    try {
      if (newUp != null) {
        up = newUp;
      }
      if (newDown != null) {
        down = newDown;
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private static ServerSocket listen(int port) throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 128);
    return s;
  }

  private void startAcceptor(ServerSocket socket) {
    Thread t = new Thread(() -> acceptLoop(socket), "fault-proxy-accept-" + port);
    t.setDaemon(true);
    lock.lock();
    try {
      acceptor = t;
    } finally {
      lock.unlock();
    }
    t.start();
  }

  private void acceptLoop(ServerSocket socket) {
    while (true) {
      Socket client;
      try {
        client = socket.accept();
      } catch (IOException e) {
        return; // refused, healed onto a new socket, or closed
      }
      accepted.incrementAndGet();
      Socket server = new Socket();
      Link link = new Link(client, server);
      links.add(link);
      try {
        server.connect(target, 5_000);
      } catch (IOException e) {
        link.close(); // the client sees a reset, as if the server refused
        continue;
      }
      link.start();
    }
  }

  /** One forwarded connection: a pump each way. */
  private final class Link {
    private final Socket client;
    private final Socket server;
    private volatile boolean lostBytes;
    private volatile boolean done;

    Link(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void start() {
      pump(client, server, true);
      pump(server, client, false);
    }

    private void pump(Socket from, Socket to, boolean upstream) {
      Thread t = new Thread(() -> {
        byte[] buffer = new byte[16 * 1024];
        try {
          InputStream in = from.getInputStream();
          OutputStream out = to.getOutputStream();
          while (true) {
            if (!awaitReadable(upstream)) {
              return;
            }
            int n = in.read(buffer);
            if (n < 0) {
              return;
            }
            long readAt = System.nanoTime();
            Flow flow = awaitFlow(upstream);
            if (flow == null) {
              return;
            }
            if (flow == Flow.DROP) {
              lostBytes = true;
              continue;
            }
            delayUntil(readAt);
            out.write(buffer, 0, n);
            out.flush();
            (upstream ? bytesUp : bytesDown).addAndGet(n);
          }
        } catch (IOException e) {
          // one side closed or was reset: the link ends
        } finally {
          close();
        }
      }, "fault-proxy-" + (upstream ? "up-" : "down-") + port);
      t.setDaemon(true);
      t.start();
    }

    /** Waits while this direction is stalled; false when the link or proxy is closing. */
    private boolean awaitReadable(boolean upstream) {
      return awaitFlow(upstream) != null;
    }

    /** This direction's flow once it is not stalled; null when the link or proxy is closing. */
    private Flow awaitFlow(boolean upstream) {
      lock.lock();
      try {
        while (!done && !closed && (upstream ? up : down) == Flow.STALL) {
          changed.awaitUninterruptibly();
        }
        return done || closed ? null : (upstream ? up : down);
      } finally {
        lock.unlock();
      }
    }

    private void delayUntil(long readAt) {
      while (true) {
        long latency;
        lock.lock();
        try {
          latency = latencyNanos;
        } finally {
          lock.unlock();
        }
        long wait = readAt + latency - System.nanoTime();
        if (wait <= 0 || done) {
          return;
        }
        LockSupport.parkNanos(wait);
      }
    }

    void close() {
      if (done) {
        return;
      }
      done = true;
      links.remove(this);
      reset(client);
      reset(server);
      lock.lock();
      try {
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  private static void reset(Socket s) {
    try {
      if (!s.isClosed()) {
        s.setSoLinger(true, 0);
      }
    } catch (SocketException e) {
      // not connected yet: a plain close is all there is
    }
    closeQuietly(s);
  }

  private static void closeQuietly(Closeable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (IOException e) {
      // closing is all we want
    }
  }
}

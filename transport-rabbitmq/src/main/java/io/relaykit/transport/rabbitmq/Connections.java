package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.TopologyRecoveryException;
import com.rabbitmq.client.impl.DefaultExceptionHandler;
import com.rabbitmq.client.impl.recovery.RecordedBinding;
import com.rabbitmq.client.impl.recovery.RecordedConsumer;
import com.rabbitmq.client.impl.recovery.RecordedExchange;
import com.rabbitmq.client.impl.recovery.RecordedQueue;
import com.rabbitmq.client.impl.recovery.TopologyRecoveryFilter;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.SocketFactory;
import javax.net.ssl.SSLSocketFactory;
import java.util.concurrent.TimeoutException;

/** Opens broker connections from a config, with errors that say which broker and how to start it. */
final class Connections {
  private Connections() {}

  /**
   * A new connection named {@code <connectionName>-<role>}.
   *
   * @param automaticRecovery whether amqp-client reconnects and restores channels, QoS and
   *     consumers by itself after a connection loss
   */
  static Connection open(RabbitMqTransportConfig config, String role, boolean automaticRecovery)
      throws IOException {
    return open(factory(config, automaticRecovery), config, role);
  }

  /**
   * Like {@link #open(RabbitMqTransportConfig, String, boolean)} with automatic recovery, counting
   * in {@code recoveryFailures} every channel or consumer that amqp-client could not recover (each
   * is logged at WARNING, naming the connection).
   */
  static Connection openRecovering(RabbitMqTransportConfig config, String role,
      AtomicLong recoveryFailures) throws IOException {
    ConnectionFactory factory = factory(config, true);
    factory.setExceptionHandler(new RecoveryFailures(config.connectionName() + "-" + role,
        recoveryFailures));
    return open(factory, config, role);
  }

  /** Counts and logs what automatic recovery could not restore; the rest as amqp-client does. */
  private static final class RecoveryFailures extends DefaultExceptionHandler {
    private static final System.Logger LOG = System.getLogger(Connections.class.getName());
    private final String name;
    private final AtomicLong failures;

    RecoveryFailures(String name, AtomicLong failures) {
      this.name = name;
      this.failures = failures;
    }

    @Override
    public void handleChannelRecoveryException(Channel ch, Throwable exception) {
      failures.incrementAndGet();
      LOG.log(System.Logger.Level.WARNING, "connection " + name + " could not recover channel "
          + ch.getChannelNumber() + " (recovered at the next connection loss): " + exception);
    }

    @Override
    public void handleTopologyRecoveryException(Connection conn, Channel ch,
        TopologyRecoveryException exception) {
      failures.incrementAndGet();
      LOG.log(System.Logger.Level.WARNING, "connection " + name + " could not recover "
          + (exception.getRecordedEntity() == null ? "its topology"
          : exception.getRecordedEntity()) + ": " + exception.getMessage());
    }
  }

  /** A publishing connection and the socket under it, which only {@link #forceClose} touches. */
  record Opened(Connection connection, Socket socket) {
    /**
     * Closes the socket under the connection: a thread blocked writing to it (a broker that stopped
     * reading) fails at once with an IOException, where amqp-client's own close would queue behind
     * that write without end.
     */
    void forceClose() {
      try {
        socket.close();
      } catch (IOException e) {
        // closed either way
      }
    }
  }

  /**
   * A new connection without automatic recovery whose socket the caller gets as well (see {@link
   * Opened#forceClose}). Channel RPCs (channel.open, declarations, confirm.select) wait at most
   * {@code rpcTimeout} for their answer.
   */
  static Opened openWithSocket(RabbitMqTransportConfig config, String role, Duration rpcTimeout)
      throws IOException {
    ConnectionFactory factory = factory(config, false);
    factory.setChannelRpcTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE,
        rpcTimeout.toMillis())));
    AtomicReference<Socket> socket = new AtomicReference<>();
    SocketFactory delegate = factory.getSocketFactory() != null
        ? factory.getSocketFactory() : SocketFactory.getDefault();
    factory.setSocketFactory(delegate instanceof SSLSocketFactory ssl
        ? new CapturingSslFactory(ssl, socket) : new CapturingFactory(delegate, socket));
    Connection c = open(factory, config, role);
    if (socket.get() == null) {
      c.abort();
      throw new IOException("the " + role + " connection was opened without a socket");
    }
    return new Opened(c, socket.get());
  }

  /** Recovers consumers, never the (durable, explicitly declared) exchanges, queues, bindings. */
  static final TopologyRecoveryFilter CONSUMERS_ONLY = new TopologyRecoveryFilter() {
    @Override
    public boolean filterExchange(RecordedExchange recordedExchange) {
      return false;
    }

    @Override
    public boolean filterQueue(RecordedQueue recordedQueue) {
      return false;
    }

    @Override
    public boolean filterBinding(RecordedBinding recordedBinding) {
      return false;
    }

    @Override
    public boolean filterConsumer(RecordedConsumer recordedConsumer) {
      return true;
    }
  };

  private static ConnectionFactory factory(RabbitMqTransportConfig config,
      boolean automaticRecovery) {
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(config.uri());
    } catch (URISyntaxException | GeneralSecurityException e) {
      throw new IllegalArgumentException("uri is not usable: " + config.redactedUri(), e);
    }
    factory.setAutomaticRecoveryEnabled(automaticRecovery);
    factory.setTopologyRecoveryEnabled(automaticRecovery);
    // Consumers only: relaykit declares its exchanges, queues and bindings (all durable) on
    // short-lived channels it closes at once, and amqp-client would redeclare them on those
    // closed channels after every connection loss, failing each with "channel is already closed".
    factory.setTopologyRecoveryFilter(CONSUMERS_ONLY);
    factory.setNetworkRecoveryInterval(config.recoveryInterval().toMillis());
    factory.setConnectionTimeout(10_000);
    factory.setRequestedHeartbeat((int) config.heartbeat().toSeconds());
    return factory;
  }

  private static Connection open(ConnectionFactory factory, RabbitMqTransportConfig config,
      String role) throws IOException {
    try {
      return factory.newConnection(config.connectionName() + "-" + role);
    } catch (TimeoutException e) {
      throw new IOException(unreachable(config), e);
    } catch (IOException e) {
      throw new IOException(unreachable(config) + ": " + rootCause(e), e);
    }
  }

  private static String rootCause(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() != null ? t.getMessage() : t.toString();
  }

  /** Remembers the (one) socket amqp-client creates for a connection. */
  private static final class CapturingFactory extends SocketFactory {
    private final SocketFactory delegate;
    private final AtomicReference<Socket> socket;

    CapturingFactory(SocketFactory delegate, AtomicReference<Socket> socket) {
      this.delegate = delegate;
      this.socket = socket;
    }

    private Socket keep(Socket s) {
      socket.set(s);
      return s;
    }

    @Override
    public Socket createSocket() throws IOException {
      return keep(delegate.createSocket());
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
      return keep(delegate.createSocket(host, port));
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress local, int localPort)
        throws IOException {
      return keep(delegate.createSocket(host, port, local, localPort));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
      return keep(delegate.createSocket(host, port));
    }

    @Override
    public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort)
        throws IOException {
      return keep(delegate.createSocket(host, port, local, localPort));
    }
  }

  /** {@link CapturingFactory} for amqps: stays an SSLSocketFactory, as amqp-client checks. */
  private static final class CapturingSslFactory extends SSLSocketFactory {
    private final SSLSocketFactory delegate;
    private final AtomicReference<Socket> socket;

    CapturingSslFactory(SSLSocketFactory delegate, AtomicReference<Socket> socket) {
      this.delegate = delegate;
      this.socket = socket;
    }

    private Socket keep(Socket s) {
      socket.set(s);
      return s;
    }

    @Override
    public String[] getDefaultCipherSuites() {
      return delegate.getDefaultCipherSuites();
    }

    @Override
    public String[] getSupportedCipherSuites() {
      return delegate.getSupportedCipherSuites();
    }

    @Override
    public Socket createSocket(Socket s, String host, int port, boolean autoClose)
        throws IOException {
      return keep(delegate.createSocket(s, host, port, autoClose));
    }

    @Override
    public Socket createSocket() throws IOException {
      return keep(delegate.createSocket());
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
      return keep(delegate.createSocket(host, port));
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress local, int localPort)
        throws IOException {
      return keep(delegate.createSocket(host, port, local, localPort));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
      return keep(delegate.createSocket(host, port));
    }

    @Override
    public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort)
        throws IOException {
      return keep(delegate.createSocket(host, port, local, localPort));
    }
  }

  static String unreachable(RabbitMqTransportConfig config) {
    return "cannot connect to RabbitMQ at " + config.redactedUri()
        + " (start it with `rabbitmq-server -detached`, or point "
        + RabbitMqTransportConfig.URI_ENV + " at a running broker)";
  }
}

package io.relaykit.storage.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One Lettuce client and one shared, auto-reconnecting connection (Lettuce pipelines the commands of
 * all threads on it). Connects lazily, so an application can start while Redis is down. With
 * {@link RedisStorageConfig#cluster()} the client is Lettuce's {@code RedisClusterClient}: it reads
 * the topology from the seed URIs, routes each command and script by its first key's slot,
 * follows MOVED/ASK redirects and refreshes the topology on Lettuce's default adaptive triggers
 * (redirects, persistent reconnects) and every 60 s; every relaykit
 * script touches the keys of one slot only. The stores see the commands both clients share
 * ({@link RedisClusterCommands}). On a cluster, commands issued while a node is unreachable wait
 * for its reconnect up to the command timeout instead of failing at once (Lettuce connects to
 * nodes lazily, and rejecting would refuse the first commands to every node), so a tiered store
 * falls back after one command timeout, then skips the fast tier for its back-off.
 *
 * <p>Implementation notes: commands issued while the connection is down are rejected at once
 * ({@code REJECT_COMMANDS}) instead of being buffered until the command timeout, so a tiered store
 * falls back without waiting. A failed connect is not retried before the reconnect delay has passed,
 * so callers do not queue up behind a connect timeout each.
 */
final class RedisConnector implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RedisStorage.class.getName());

  private final RedisStorageConfig config;
  private final ClientResources resources;
  private final AbstractRedisClient client;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile Connection connection;
  private volatile boolean closed;
  private long nextConnectNanos;
  private RuntimeException lastConnectFailure;

  RedisConnector(RedisStorageConfig config) {
    this.config = config;
    this.resources = DefaultClientResources.builder()
        .ioThreadPoolSize(2)
        .computationThreadPoolSize(2)
        .reconnectDelay(Delay.exponential(Duration.ofMillis(10), config.reconnectMaxDelay(), 2,
            TimeUnit.MILLISECONDS))
        .build();
    SocketOptions socket = SocketOptions.builder()
        .connectTimeout(config.connectTimeout())
        .keepAlive(true)
        .build();
    if (config.cluster()) {
      List<RedisURI> seeds = new ArrayList<>();
      for (String seed : config.uris()) {
        RedisURI uri = RedisURI.create(seed);
        // The URI's timeout bounds the connection handshake (HELLO, AUTH, SELECT); commands
        // have theirs from TimeoutOptions below.
        uri.setTimeout(config.connectTimeout());
        seeds.add(uri);
      }
      RedisClusterClient cluster = RedisClusterClient.create(resources, seeds);
      // Lettuce opens the connection to each cluster node lazily, and REJECT_COMMANDS would
      // refuse the first commands to a node while that connection is being made: on a cluster,
      // commands wait for a (re)connect, within the command timeout.
      cluster.setOptions(ClusterClientOptions.builder()
          .autoReconnect(true)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.ACCEPT_COMMANDS)
          .socketOptions(socket)
          .timeoutOptions(TimeoutOptions.enabled(config.commandTimeout()))
          .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
              .enablePeriodicRefresh(Duration.ofSeconds(60))
              .build())
          .build());
      this.client = cluster;
    } else {
      RedisURI uri = RedisURI.create(config.uri());
      // The URI's timeout bounds the connection handshake (HELLO, AUTH, SELECT); commands
      // have theirs from TimeoutOptions below.
      uri.setTimeout(config.connectTimeout());
      RedisClient single = RedisClient.create(resources, uri);
      single.setOptions(ClientOptions.builder()
          .autoReconnect(true)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .socketOptions(socket)
          .timeoutOptions(TimeoutOptions.enabled(config.commandTimeout()))
          .build());
      this.client = single;
    }
  }

  /** A connection of either kind, with the command interfaces both share. */
  private record Connection(StatefulConnection<String, String> raw,
      RedisClusterCommands<String, String> sync, RedisClusterAsyncCommands<String, String> async) {
    static Connection of(StatefulRedisConnection<String, String> c) {
      return new Connection(c, c.sync(), c.async());
    }

    static Connection of(StatefulRedisClusterConnection<String, String> c) {
      return new Connection(c, c.sync(), c.async());
    }
  }

  RedisStorageConfig config() {
    return config;
  }

  /** Synchronous commands; each waits at most the command timeout. */
  RedisClusterCommands<String, String> sync() {
    return connection().sync();
  }

  /** Asynchronous commands, for pipelining; each future fails after the command timeout. */
  RedisClusterAsyncCommands<String, String> async() {
    return connection().async();
  }

  /** Where Redis is, without credentials, for error messages. */
  String where() {
    return config.redactedUri();
  }

  private Connection connection() {
    Connection c = connection;
    if (c != null) {
      return c;
    }
    // Only one caller waits for a connect; the others fail at once rather than queue up behind
    // the connect timeout (a tiered store answers them from its durable tier meanwhile).
    if (!lock.tryLock()) {
      throw new RedisConnectionException("not connected to Redis at " + where()
          + " yet; another caller is connecting");
    }
    try {
      if (closed) {
        throw new IllegalStateException("RedisStorage for " + where() + " is closed");
      }
      if (connection != null) {
        return connection;
      }
      long now = System.nanoTime();
      if (lastConnectFailure != null && now - nextConnectNanos < 0) {
        throw new RedisConnectionException("not connected to Redis at " + where()
            + "; last attempt failed: " + lastConnectFailure.getMessage(), lastConnectFailure);
      }
      try {
        connection = client instanceof RedisClusterClient cluster
            ? Connection.of(cluster.connect())
            : Connection.of(((RedisClient) client).connect());
        lastConnectFailure = null;
        LOG.log(System.Logger.Level.DEBUG, "connected to Redis at {0}", where());
        return connection;
      } catch (RuntimeException e) {
        lastConnectFailure = e;
        nextConnectNanos = System.nanoTime() + config.reconnectMaxDelay().toNanos();
        throw e;
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      Connection c = connection;
      connection = null;
      try {
        if (c != null) {
          c.raw().close();
        }
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS);
      }
    } finally {
      lock.unlock();
    }
  }
}

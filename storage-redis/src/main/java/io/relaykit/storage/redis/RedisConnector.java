package io.relaykit.storage.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One Lettuce client and one shared, auto-reconnecting connection (Lettuce pipelines the commands of
 * all threads on it). Connects lazily, so an application can start while Redis is down.
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
  private final RedisClient client;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile StatefulRedisConnection<String, String> connection;
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
    RedisURI uri = RedisURI.create(config.uri());
    uri.setTimeout(config.commandTimeout());
    this.client = RedisClient.create(resources, uri);
    client.setOptions(ClientOptions.builder()
        .autoReconnect(true)
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .socketOptions(SocketOptions.builder()
            .connectTimeout(config.connectTimeout())
            .keepAlive(true)
            .build())
        .timeoutOptions(TimeoutOptions.enabled(config.commandTimeout()))
        .build());
  }

  RedisStorageConfig config() {
    return config;
  }

  /** Synchronous commands; each waits at most the command timeout. */
  RedisCommands<String, String> sync() {
    return connection().sync();
  }

  /** Asynchronous commands, for pipelining; each future fails after the command timeout. */
  RedisAsyncCommands<String, String> async() {
    return connection().async();
  }

  /** Where Redis is, without credentials, for error messages. */
  String where() {
    return config.redactedUri();
  }

  private StatefulRedisConnection<String, String> connection() {
    StatefulRedisConnection<String, String> c = connection;
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
        connection = client.connect();
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
      StatefulRedisConnection<String, String> c = connection;
      connection = null;
      try {
        if (c != null) {
          c.close();
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

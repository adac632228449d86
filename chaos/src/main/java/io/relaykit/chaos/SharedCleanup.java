package io.relaykit.chaos;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.List;

/**
 * Removes what a run left on the shared servers, reached directly (not through the proxies):
 * the demo's Redis keys under its namespace, and its RabbitMQ exchanges and queues. Best effort:
 * a failure is reported on stderr, never thrown, since the verdict is already made.
 */
final class SharedCleanup {
  private SharedCleanup() {}

  /** Deletes every key under {@code prefix} (SCAN, 500 at a time). */
  static void redis(String uri, String prefix) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      RedisCommands<String, String> r = c.sync();
      ScanCursor cursor = ScanCursor.INITIAL;
      ScanArgs args = ScanArgs.Builder.matches(prefix + "*").limit(500);
      do {
        KeyScanCursor<String> page = r.scan(cursor, args);
        if (!page.getKeys().isEmpty()) {
          r.del(page.getKeys().toArray(String[]::new));
        }
        cursor = page;
      } while (!cursor.isFinished());
    } catch (RuntimeException e) {
      System.err.println("relaykit chaos: could not remove Redis keys " + prefix + "*: " + e);
    } finally {
      client.shutdown();
    }
  }

  /** Deletes the demo's exchanges and queues named {@code prefix}orders.EFFECT[...]. */
  static void rabbitmq(String uri, String prefix, List<String> delayLevels) {
    ConnectionFactory f = new ConnectionFactory();
    try {
      f.setUri(uri);
      f.setConnectionTimeout(5_000);
      try (com.rabbitmq.client.Connection c = f.newConnection("relaykit-chaos-cleanup");
          Channel ch = c.createChannel()) {
        for (String effect : Checker.EFFECTS) {
          String base = prefix + "orders." + effect;
          String queue = base + "." + effect;
          ch.queueDelete(queue);
          ch.queueDelete(queue + ".dead");
          for (String level : delayLevels) {
            ch.queueDelete(queue + ".retry-" + level);
          }
          ch.exchangeDelete(base);
        }
      }
    } catch (Exception e) {
      System.err.println("relaykit chaos: could not remove RabbitMQ names " + prefix + "*: " + e);
    }
  }
}

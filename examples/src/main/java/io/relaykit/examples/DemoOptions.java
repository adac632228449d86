package io.relaykit.examples;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The demo's command-line options, validated: a bad value fails at startup with a message naming
 * the option and the value.
 *
 * @param host interface to bind; loopback unless asked otherwise
 * @param port HTTP port (0 picks a free one)
 * @param dataDir where the H2 database lives (and the demo's own Kafka broker, if it runs one)
 * @param storage {@code h2} (embedded file database) or {@code postgres}
 *     ({@code RELAYKIT_POSTGRES_URL}, default {@code jdbc:postgresql://127.0.0.1:5432/postgres}), or
 *     {@code redis}: the H2 file database plus a Redis fast tier in front of its idempotency store
 *     ({@code RELAYKIT_REDIS_URI}, default {@code redis://127.0.0.1:6379})
 * @param transport {@code memory} (in-process), {@code kafka} ({@code
 *     RELAYKIT_KAFKA_BOOTSTRAP_SERVERS}; unset: a local broker the demo runs under {@code
 *     dataDir/kafka}) or {@code rabbitmq}
 *     ({@code RELAYKIT_RABBITMQ_URI}, default {@code amqp://guest:guest@127.0.0.1:5672})
 * @param failRate probability in [0, 1) that a consumer attempt fails transiently (half of these
 *     failures come after the effect, as if its ack were lost)
 * @param poisonSku orders of this SKU fail permanently and are dead-lettered; null for none
 * @param lease how long a relay owns claimed outbox rows (a crashed relay's rows wait this long)
 * @param namespace prefix for RabbitMQ's exchanges and queues and the Redis keys, so demos sharing
 *     a server do not share state; empty for none
 */
public record DemoOptions(
    String host,
    int port,
    Path dataDir,
    String storage,
    String transport,
    double failRate,
    String poisonSku,
    Duration lease,
    String namespace) {

  static final List<String> STORAGES = List.of("h2", "postgres", "redis");
  static final List<String> TRANSPORTS = List.of("memory", "kafka", "rabbitmq");
  private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9._:-]{0,64}");

  public DemoOptions {
    if (host == null || host.isBlank()) {
      throw new IllegalArgumentException("--host must not be blank");
    }
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("--port must be in 0..65535, was " + port);
    }
    if (dataDir == null) {
      throw new IllegalArgumentException("--data must name a directory");
    }
    if (!STORAGES.contains(storage)) {
      throw new IllegalArgumentException("--storage must be one of " + STORAGES + ", was '"
          + storage + "'");
    }
    if (!TRANSPORTS.contains(transport)) {
      throw new IllegalArgumentException("--transport must be one of " + TRANSPORTS + ", was '"
          + transport + "'");
    }
    if (!(failRate >= 0 && failRate < 1)) {
      throw new IllegalArgumentException("--fail-rate must be in [0, 1), was " + failRate);
    }
    if (poisonSku != null && poisonSku.isBlank()) {
      throw new IllegalArgumentException("--poison-sku must not be blank");
    }
    if (lease == null || lease.isNegative() || lease.isZero()) {
      throw new IllegalArgumentException("--lease must be a positive number of seconds, was "
          + (lease == null ? null : lease.toSeconds()));
    }
    if (namespace == null || !NAMESPACE.matcher(namespace).matches()) {
      throw new IllegalArgumentException("--namespace may hold at most 64 letters, digits and"
          + " . _ : -, was '" + namespace + "'");
    }
  }

  /** Options without a namespace. */
  public DemoOptions(String host, int port, Path dataDir, String storage, String transport,
      double failRate, String poisonSku, Duration lease) {
    this(host, port, dataDir, storage, transport, failRate, poisonSku, lease, "");
  }

  /** Defaults: 127.0.0.1:8080, ./data, h2, memory, no failures, 5 s lease, no namespace. */
  public static DemoOptions defaults() {
    return new DemoOptions("127.0.0.1", 8080, Path.of("data"), "h2", "memory", 0, null,
        Duration.ofSeconds(5));
  }

  /**
   * Parses {@code --name value} pairs over the defaults.
   *
   * @throws IllegalArgumentException naming an unknown option, a missing value or a bad value
   */
  public static DemoOptions parse(String... args) {
    DemoOptions o = defaults();
    String host = o.host;
    int port = o.port;
    Path data = o.dataDir;
    String storage = o.storage;
    String transport = o.transport;
    double failRate = o.failRate;
    String poison = o.poisonSku;
    Duration lease = o.lease;
    String namespace = o.namespace;
    for (int i = 0; i < args.length; i++) {
      String name = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(name + " needs a value");
      }
      String value = args[++i];
      switch (name) {
        case "--host":
          host = value;
          break;
        case "--port":
          port = integer(name, value);
          break;
        case "--data":
          data = Path.of(value);
          break;
        case "--storage":
          storage = value.toLowerCase(Locale.ROOT);
          break;
        case "--transport":
          transport = value.toLowerCase(Locale.ROOT);
          break;
        case "--fail-rate":
          try {
            failRate = Double.parseDouble(value);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--fail-rate must be a number, was '" + value
                + "'", e);
          }
          break;
        case "--poison-sku":
          poison = value;
          break;
        case "--lease":
          lease = Duration.ofSeconds(integer(name, value));
          break;
        case "--namespace":
          namespace = value;
          break;
        default:
          throw new IllegalArgumentException("unknown option " + name + "; known: --host, --port,"
              + " --data, --storage, --transport, --fail-rate, --poison-sku, --lease, --namespace");
      }
    }
    return new DemoOptions(host, port, data, storage, transport, failRate, poison, lease,
        namespace);
  }

  private static int integer(String name, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be a whole number, was '" + value + "'", e);
    }
  }
}

package io.relaykit.bench;

import io.relaykit.bench.LatencyBenchmark.Backend;
import io.relaykit.bench.LatencyBenchmark.Wake;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.time.InstantSource;

/**
 * One relay of a {@link LatencyBenchmark} row with several relays, in a child JVM that {@link
 * LatencyRun} starts: the relay with its defaults on the parent's outbox table, publishing to the
 * parent's destination. Prints {@value #READY} once the relay runs; closes the relay and exits when
 * standard input ends (the parent closed it, or died).
 *
 * <p>Arguments: backend ({@link Backend} name), JDBC URL, table prefix, destination, wake ({@link
 * Wake} name), Kafka bootstrap servers ({@code -} for none). Exit status 1 if
 * the relay could not start (the exception on standard error).
 */
public final class LatencyRelayProcess {

  static final String READY = "ready";

  private LatencyRelayProcess() {}

  /**
   * Runs one relay until standard input ends.
   *
   * @param args see the class comment
   * @throws Exception if standard input fails
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: LatencyRelayProcess BACKEND JDBC_URL TABLE_PREFIX DESTINATION"
          + " WAKE KAFKA_BOOTSTRAP|-");
      System.exit(2);
    }
    Backend backend = Backend.valueOf(args[0]);
    Wake wake = Wake.valueOf(args[4]);
    JdbcStorage storage;
    Publisher publisher;
    OutboxRelay relay;
    try {
      storage = JdbcStorage.open(wake.storage(JdbcStorageConfig.builder()
          .jdbcUrl(args[1]).tablePrefix(args[2])).build(), InstantSource.system());
      publisher = switch (backend) {
        case POSTGRES_KAFKA -> KafkaPublisher.create(LatencyRun.kafkaConfig(args[5]));
        case POSTGRES_RABBITMQ -> RabbitMqPublisher.create(RabbitMqTransportConfig.builder().build());
        case H2_INPROCESS -> throw new IllegalArgumentException(
            "an in-process transport cannot be reached from another JVM");
      };
      relay = wake.relay(OutboxRelay.builder(wake.outbox(storage), publisher,
          storage.deadLetterStore())).build();
      relay.start();
    } catch (RuntimeException e) {
      e.printStackTrace();
      System.exit(1);
      return;
    }
    System.out.println(READY);
    System.out.flush();
    byte[] buffer = new byte[256];
    while (System.in.read(buffer) >= 0) {
      // Nothing is sent on the lifeline; only its end matters.
    }
    relay.close();
    publisher.close();
    storage.close();
    System.exit(0);
  }
}

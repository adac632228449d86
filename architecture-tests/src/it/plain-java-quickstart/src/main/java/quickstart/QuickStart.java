package quickstart;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentHandler;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.sql.Connection;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

// The imports each docs block shows (a repeated single-type import is allowed).
// tag::outbox[]
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.sql.Connection;
import java.time.InstantSource;
// end::outbox[]
// tag::idempotency[]
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentHandler;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.message.MessageHandler;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import java.time.Duration;
// end::idempotency[]
// tag::kafka[]
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
// end::kafka[]
// tag::rabbitmq[]
import io.relaykit.message.Message;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
// end::rabbitmq[]

/**
 * The plain-Java blocks of docs/outbox.md, docs/idempotency.md and docs/consumers.md: every
 * backend built with its own module's builders, with no Guice anywhere on the class path. The
 * regions between {@code tag::NAME[]} and {@code end::NAME[]} (an import region, then the code)
 * are those blocks, word for word (architecture-tests' DocSnippetsTest compares them); the rest
 * runs them and reports what arrived.
 */
public final class QuickStart {

  private final BlockingQueue<Message> handled = new LinkedBlockingQueue<>();
  private final AtomicInteger smsSent = new AtomicInteger();

  /** What a handler does in the README: here, remember the message. */
  void handle(Message message) {
    handled.add(message);
  }

  void sendSms(Message message) {
    smsSent.incrementAndGet();
  }

  /**
   * The outbox on H2 or PostgreSQL, relayed through the in-process transport.
   *
   * @return the message the subscriber received
   */
  public Message outbox(String jdbcUrl, String user, String tablePrefix) throws Exception {
    // tag::outbox[]
    InProcessTransport transport = InProcessTransport.create();  // or a Kafka / RabbitMQ publisher
    transport.subscribe(SubscriptionSpec.builder("orders", "billing").build(),
        delivery -> handle(delivery.message()));

    JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder()
            .jdbcUrl(jdbcUrl)              // jdbc:h2:mem:orders, jdbc:postgresql://127.0.0.1:5432/test
            .username(user)
            .tablePrefix(tablePrefix)      // relaykit_ by default; created or migrated on open
            .build(),
        InstantSource.system());
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      // ... your own inserts on tx ...
      storage.outboxStore().append(tx, "orders", Message.builder()
          .type("order.placed").key("order-42").payload("{\"id\":42}").build());
      tx.commit();                         // the message commits with your rows, or not at all
      storage.outboxStore().committed();  // wakes this JVM's relays now, not at their next poll
    }
    OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), transport,
        storage.deadLetterStore()).build();
    relay.start();                         // claims, publishes, marks sent; close() stops it
    // end::outbox[]
    try {
      return next("the outbox message relayed from " + jdbcUrl);
    } finally {
      relay.close();
      transport.close();
      storage.close();
    }
  }

  /**
   * Redis in front of the database for idempotency: the handler below runs one delivery twice.
   *
   * @return how many SMS were sent (1 when the dedupe works)
   */
  public int idempotency(String redisUri, String keyPrefix, String jdbcUrl, String tablePrefix)
      throws Exception {
    try (JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder().jdbcUrl(jdbcUrl)
        .tablePrefix(tablePrefix).build(), InstantSource.system())) {
      // tag::idempotency[]
      RedisStorage redis = RedisStorage.open(RedisStorageConfig.builder()
          .uri(redisUri)                   // redis://127.0.0.1:6379
          .keyPrefix(keyPrefix)
          .build());
      IdempotencyStore idempotency = TieredIdempotencyStore.of(
          redis.idempotencyStore(),        // fast path
          storage.idempotencyStore());     // the database's unique key: the final guard
      MessageHandler handler = IdempotentHandler.builder(idempotency,
          message -> message.key().orElseThrow() + ":sms",  // the business key
          Duration.ofSeconds(30),
          delivery -> sendSms(delivery.message()))
          .build();
      // end::idempotency[]
      try {
        Message message = Message.builder().type("order.placed").key(keyPrefix + "order-42")
            .payload("{\"id\":42}").build();
        handler.handle(Delivery.first(message, "orders"));
        handler.handle(Delivery.first(message, "orders"));   // a redelivery: skipped
        if (redis.idempotencyStore().status(keyPrefix + "order-42:sms").isEmpty()) {
          throw new AssertionError("Redis holds no idempotency key for " + keyPrefix
              + "order-42:sms");
        }
        return smsSent.get();
      } finally {
        redis.close();
      }
    }
  }

  /**
   * Kafka: a confirmed publish, then a consumer group reading it back.
   *
   * @return the message the subscriber received
   */
  public Message kafka(String bootstrapServers, String topic) throws Exception {
    // tag::kafka[]
    KafkaTransportConfig config = KafkaTransportConfig.builder()
        .bootstrapServers(bootstrapServers)  // 127.0.0.1:9092
        .build();
    try (KafkaPublisher publisher = KafkaPublisher.create(config)) {    // acks=all, idempotent
      publisher.publish(topic, Message.builder().type("order.placed").key("order-42")
          .payload("{\"id\":42}").build()).get();                      // the broker's confirm
    }
    KafkaSubscriber subscriber = KafkaSubscriber.create(config);
    subscriber.subscribe(SubscriptionSpec.builder(topic, "billing").concurrency(8).build(),
        delivery -> handle(delivery.message()));  // return = done; throw = retry topic, then DLT
    // end::kafka[]
    try {
      return next("the Kafka message on " + topic);
    } finally {
      subscriber.close();
    }
  }

  /**
   * RabbitMQ: subscribe (declares the group's queues), then a confirmed publish.
   *
   * @return the message the subscriber received
   */
  public Message rabbitMq(String uri, String namePrefix) throws Exception {
    // tag::rabbitmq[]
    RabbitMqTransportConfig config = RabbitMqTransportConfig.builder()
        .uri(uri)                          // amqp://guest:guest@127.0.0.1:5672
        .namePrefix(namePrefix)            // in front of every exchange and queue name
        .build();
    RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config);
    Subscription subscription = subscriber.subscribe(
        SubscriptionSpec.builder("orders", "billing").build(),   // a quorum queue per group
        delivery -> handle(delivery.message()));
    try (RabbitMqPublisher publisher = RabbitMqPublisher.create(config)) {
      publisher.publish("orders", Message.builder().type("order.placed").key("order-42")
          .payload("{\"id\":42}").build()).get();  // confirmed; unroutable = failed
    }
    // end::rabbitmq[]
    try {
      return next("the RabbitMQ message on " + namePrefix + "orders");
    } finally {
      subscription.close();
      subscriber.close();
    }
  }

  private Message next(String what) throws InterruptedException {
    Message message = handled.poll(60, TimeUnit.SECONDS);
    if (message == null) {
      throw new AssertionError(what + " did not arrive within 60 s");
    }
    return message;
  }
}

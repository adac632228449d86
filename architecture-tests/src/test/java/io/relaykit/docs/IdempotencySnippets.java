package io.relaykit.docs;

// tag::heartbeat[]
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentHandler;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.message.MessageHandler;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
// end::heartbeat[]
import io.relaykit.message.Message;

/** docs/idempotency.md. */
final class IdempotencySnippets {
  private IdempotencySnippets() {}

  static void sendSms(Message message) {}

  static MessageHandler heartbeat(RedisStorage redis, JdbcStorage storage,
      ScheduledExecutorService scheduledExecutor) {
    // tag::heartbeat[]
    IdempotencyStore idempotency = TieredIdempotencyStore.of(
        redis.idempotencyStore(),                          // fast path
        storage.idempotencyStore());                       // database unique key: the final guard
    MessageHandler handler = IdempotentHandler.builder(idempotency,
            message -> message.key().orElseThrow() + ":sms",   // the business key, not the message id
            Duration.ofSeconds(30),
            delivery -> sendSms(delivery.message()))
        .heartbeat(Duration.ofSeconds(10), IdempotentHandler.Scheduler.of(scheduledExecutor))
        .build();                       // renews the lease while sendSms runs; optional
    // end::heartbeat[]
    return handler;
  }
}

package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Dead-letter retention on Redis measures a dead letter's age on Redis's clock (TIME). */
@DisplayName("Redis dead-letter retention measured on Redis's clock")
class RedisDeadLetterRetentionClockTest {
  private static RedisTestSupport support;
  private static RedisStorage storage;

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
    storage = support.open();
  }

  @AfterAll
  static void cleanUp() {
    if (storage != null) {
      storage.close();
    }
    if (support != null) {
      support.close();
    }
  }

  private static DeadLetter failedAt(String id, Instant at) {
    Message m = Message.builder().id(id).type("order.paid").payload("{}").build();
    return new DeadLetter(m, "orders", null, "failed", "java.lang.RuntimeException", "boom", 3,
        at, at);
  }

  @Test
  @DisplayName("a host clock 10 days ahead purges none of the dead letters 2 days old under a"
      + " 7-day retention, and one 30 days behind still purges the 8-day-old one")
  void hostClockSkewDoesNotDecide() {
    RedisDeadLetterStore store = storage.deadLetterStore("dlq-clock-" + UUID.randomUUID());
    Instant real = Instant.now();
    DeadLetter young = failedAt("young", real.minus(Duration.ofDays(2)));
    DeadLetter old = failedAt("old", real.minus(Duration.ofDays(8)));
    store.add(young);
    store.add(old);

    assertThat(store.purgeFailedOlderThan(Duration.ofDays(7), 10,
        real.plus(Duration.ofDays(10)))).isEqualTo(1);
    assertThat(store.find(young.id())).isPresent();
    assertThat(store.find(old.id())).isEmpty();

    DeadLetter old2 = failedAt("old-2", real.minus(Duration.ofDays(8)));
    store.add(old2);
    assertThat(store.purgeFailedOlderThan(Duration.ofDays(7), 10,
        real.minus(Duration.ofDays(30)))).isEqualTo(1);
    assertThat(store.find(old2.id())).isEmpty();
    assertThat(store.find(young.id())).isPresent();
  }
}

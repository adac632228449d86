package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A relay whose dead letters go to Redis: a row whose dead letter is over the store's
 * maxValueBytes is that row's failure only (issue: "a Redis dead-letter store over its size limit
 * aborts the whole cycle").
 */
class RedisDeadLetterPoisonTest {
  private final RedisTestSupport support = new RedisTestSupport();
  private final RedisStorage small = RedisStorage.open(support.config().maxValueBytes(1024).build());
  private final FakeClock clock = new FakeClock();
  private final List<String> published = new CopyOnWriteArrayList<>();

  @AfterEach
  void close() {
    small.close();
    support.close();
  }

  @Test
  @DisplayName("a rejected row whose dead letter is over Redis's maxValueBytes parks its key only:"
      + " the rest of the batch is published, the failure counted and backed off")
  void oversizeDeadLetterIsTheRowsProblem() {
    InMemoryOutboxStore outbox = new InMemoryOutboxStore(clock);
    DeadLetterStore dead = small.deadLetterStore("dlq-" + UUID.randomUUID());
    outbox.append("orders", Message.builder().type("t").key("a").payload("x".repeat(4_096))
        .createdAt(clock.instant()).build());
    outbox.append("orders", Message.builder().type("t").key("a").payload("a2")
        .createdAt(clock.instant()).build());
    for (int i = 0; i < 3; i++) {
      outbox.append("orders", Message.builder().type("t").key("k" + i).payload("ok" + i)
          .createdAt(clock.instant()).build());
    }
    Publisher rejectsBig = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message m) {
        published.add(m.payloadUtf8().length() > 100 ? "big" : m.payloadUtf8());
        if (m.payloadSize() > 100) {
          return CompletableFuture.failedFuture(new MessageRejectedException("too large"));
        }
        return CompletableFuture.completedFuture(new PublishReceipt(m.id(), destination, "p"));
      }

      @Override
      public void close() {}
    };
    OutboxRelay relay = OutboxRelay.builder(outbox, rejectsBig, dead).clock(clock).batchSize(10)
        .errorBackoff(Backoff.fixed(Duration.ofSeconds(5))).build();

    OutboxRelay.Batch b = relay.runOnce();
    assertThat(b.sent()).isEqualTo(3);
    assertThat(b.failed()).isEqualTo(1);
    assertThat(relay.counters().rowFailures()).isEqualTo(1);
    assertThat(dead.count(DeadLetterQuery.all())).isZero();
    assertThat(outbox.stats(clock.instant()).unsent()).isEqualTo(2);
    // Backed off: not tried again at once; its key waits, and the relay keeps going.
    assertThat(relay.runOnce().claimed()).isZero();
    clock.advance(Duration.ofSeconds(6));
    assertThat(relay.runOnce().failed()).isEqualTo(1);
    assertThat(published).containsExactly("big", "ok0", "ok1", "ok2", "big");
    relay.close(Duration.ofSeconds(5));
  }
}

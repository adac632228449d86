package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.ForwardingDeadLetterStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The dead-letter endpoint over several stores (in-memory stand-ins for a dead-letter topic and
 * queue): one merged, bounded page naming each entry's store, a failing store reported beside the
 * others, purges where the store removes and a clear refusal where it cannot, replays through the
 * store that holds the dead letter, one at a time.
 */
class MultiStoreDeadLettersEndpointTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryDeadLetterStore relaykit = new InMemoryDeadLetterStore(clock);
  private final InMemoryDeadLetterStore topic = new InMemoryDeadLetterStore(clock);
  private final InMemoryDeadLetterStore queue = new InMemoryDeadLetterStore(clock);
  private final List<String> replayedFromTopic = new ArrayList<>();

  private DeadLetter deadLetter(String id, String group) {
    clock.advance(Duration.ofSeconds(1));
    Message m = Message.builder().id(id).type("t").payload("{}").build();
    return new DeadLetter(m, "orders", group, "poison", null, null, 1, clock.instant(),
        clock.instant());
  }

  private DeadLetterSource topicSource(InMemoryDeadLetterStore store) {
    return DeadLetterSource.owned("kafka:orders.g1.dlt", () -> store, (s, id) -> {
      replayedFromTopic.add(id);
      return s.remove(id);
    }, "retention is the broker's (retention.ms on topic orders.g1.dlt)",
        "the broker's: retention.ms");
  }

  private RelaykitDeadLettersEndpoint endpoint(List<DeadLetterSource> brokers) {
    return new RelaykitDeadLettersEndpoint(relaykit, relaykit::remove, () -> brokers, 100);
  }

  private static List<String> ids(WebEndpointResponse<Map<String, Object>> r) {
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> entries = (List<Map<String, Object>>) r.getBody().get("deadLetters");
    return entries.stream().map(e -> e.get("store") + "/" + e.get("messageId")).toList();
  }

  @Test
  @DisplayName("one page merged over every store by last failure, each entry naming its store;"
      + " total sums the stores; store= picks one; an unknown store is 400")
  void mergedPage() {
    relaykit.add(deadLetter("a", null));
    topic.add(deadLetter("b", "g1"));
    queue.add(deadLetter("c", "g1"));
    topic.add(deadLetter("d", "g1"));
    RelaykitDeadLettersEndpoint endpoint = endpoint(List.of(topicSource(topic),
        DeadLetterSource.owned("rabbitmq:orders.g1.dead", () -> queue,
            InMemoryDeadLetterStore::remove, null, null)));

    WebEndpointResponse<Map<String, Object>> all = endpoint.list(null, null, null, null, null,
        null, null, null, null, null);
    assertThat(all.getStatus()).isEqualTo(200);
    assertThat(all.getBody()).containsEntry("total", 4L).doesNotContainKey("incomplete");
    assertThat(ids(all)).containsExactly("relaykit/a", "kafka:orders.g1.dlt/b",
        "rabbitmq:orders.g1.dead/c", "kafka:orders.g1.dlt/d");
    assertThat(ids(endpoint.list(null, null, null, null, null, null, null, null, 1, 2)))
        .containsExactly("kafka:orders.g1.dlt/b", "rabbitmq:orders.g1.dead/c");
    assertThat(ids(endpoint.list(null, null, null, null, null, null, null,
        "kafka:orders.g1.dlt", null, null)))
        .containsExactly("kafka:orders.g1.dlt/b", "kafka:orders.g1.dlt/d");
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> stores = (List<Map<String, Object>>) all.getBody().get("stores");
    assertThat(stores).extracting(s -> s.get("store") + ":" + s.get("total") + ":"
        + s.get("purge")).containsExactly("relaykit:1:true", "kafka:orders.g1.dlt:2:false",
            "rabbitmq:orders.g1.dead:1:true");
    assertThat(stores.get(1)).containsEntry("retention", "the broker's: retention.ms");

    WebEndpointResponse<Map<String, Object>> unknown = endpoint.list(null, null, null, null,
        null, null, null, "kafka:nope", null, null);
    assertThat(unknown.getStatus()).isEqualTo(400);
    assertThat((String) unknown.getBody().get("error")).contains("store must be one of")
        .contains("kafka:orders.g1.dlt");
    assertThat(endpoint.list(null, null, null, null, null, null, null, null,
        RelaykitDeadLettersEndpoint.MAX_MERGED, 1).getStatus()).isEqualTo(400);
  }

  @Test
  @DisplayName("a store that cannot be read is reported with its error; the others are listed"
      + " (200, incomplete); when every store fails, 503")
  void failingStoreIsReported() {
    relaykit.add(deadLetter("a", null));
    ForwardingDeadLetterStore down = new ForwardingDeadLetterStore(topic) {
      @Override
      public List<DeadLetter> list(DeadLetterQuery query) {
        throw new IllegalStateException("broker unreachable");
      }
    };
    RelaykitDeadLettersEndpoint endpoint = endpoint(List.of(DeadLetterSource.owned(
        "kafka:orders.g1.dlt", () -> down, (s, id) -> Optional.empty(), "no", null)));

    WebEndpointResponse<Map<String, Object>> r = endpoint.list(null, null, null, null, null,
        null, null, null, null, null);
    assertThat(r.getStatus()).isEqualTo(200);
    assertThat(r.getBody()).containsEntry("incomplete", true).containsEntry("total", 1L);
    assertThat(ids(r)).containsExactly("relaykit/a");
    assertThat(r.getBody().get("stores").toString()).contains("broker unreachable");

    WebEndpointResponse<Map<String, Object>> only = endpoint.list(null, null, null, null, null,
        null, null, "kafka:orders.g1.dlt", null, null);
    assertThat(only.getStatus()).isEqualTo(503);
    assertThat((String) only.getBody().get("error")).contains("broker unreachable");
  }

  @Test
  @DisplayName("a purge removes from a store that can (200, then 404) and is 409 with the reason"
      + " where the store cannot; the dead letter stays there")
  void purge() {
    DeadLetter inQueue = deadLetter("c", "g1");
    queue.add(inQueue);
    DeadLetter inTopic = deadLetter("b", "g1");
    topic.add(inTopic);
    RelaykitDeadLettersEndpoint endpoint = endpoint(List.of(topicSource(topic),
        DeadLetterSource.owned("rabbitmq:orders.g1.dead", () -> queue,
            InMemoryDeadLetterStore::remove, null, null)));

    WebEndpointResponse<Map<String, Object>> removed = endpoint.purge(inQueue.id(), null);
    assertThat(removed.getStatus()).isEqualTo(200);
    assertThat(removed.getBody()).containsEntry("store", "rabbitmq:orders.g1.dead")
        .containsEntry("messageId", "c");
    assertThat(queue.find(inQueue.id())).isEmpty();
    assertThat(endpoint.purge(inQueue.id(), null).getStatus()).isEqualTo(404);

    WebEndpointResponse<Map<String, Object>> refused = endpoint.purge(inTopic.id(), null);
    assertThat(refused.getStatus()).isEqualTo(409);
    assertThat((String) refused.getBody().get("error")).contains("retention is the broker's");
    assertThat(topic.find(inTopic.id())).isPresent();
    assertThat(endpoint.purge(" ", null).getStatus()).isEqualTo(400);
  }

  @Test
  @DisplayName("a replay goes through the store that holds the dead letter; a second replay of"
      + " it while the first runs is 409 and resends nothing")
  void replayThroughItsStore() throws Exception {
    DeadLetter inTopic = deadLetter("b", "g1");
    topic.add(inTopic);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    DeadLetterSource slow = DeadLetterSource.owned("kafka:orders.g1.dlt", () -> topic,
        (s, id) -> {
          replayedFromTopic.add(id);
          entered.countDown();
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return s.remove(id);
        }, "no", null);
    RelaykitDeadLettersEndpoint endpoint = endpoint(List.of(slow));

    AtomicReference<WebEndpointResponse<Map<String, Object>>> first = new AtomicReference<>();
    Thread t = new Thread(() -> first.set(endpoint.replay(inTopic.id(), null)));
    t.start();
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    WebEndpointResponse<Map<String, Object>> twin = endpoint.replay(inTopic.id(),
        "kafka:orders.g1.dlt");
    release.countDown();
    t.join(10_000);

    assertThat(twin.getStatus()).isEqualTo(409);
    assertThat((String) twin.getBody().get("error")).contains("under way");
    assertThat(first.get().getStatus()).isEqualTo(200);
    assertThat(first.get().getBody()).containsEntry("store", "kafka:orders.g1.dlt")
        .containsEntry("messageId", "b");
    assertThat(replayedFromTopic).containsExactly(inTopic.id());
    assertThat(endpoint.replay(inTopic.id(), null).getStatus()).isEqualTo(404);
  }
}

package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.ForwardingDeadLetterStore;
import io.relaykit.tck.ForwardingOutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/** The dead-letter endpoint with injected failures, and the replay strategies it is given. */
class RelaykitDeadLettersEndpointTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore();

  private DeadLetter deadLetter(String id) {
    Message m = Message.builder().id(id).type("t").payload("{}").build();
    return new DeadLetter(m, "orders", null, "attempts exhausted", null, null, 5, clock.instant(),
        clock.instant());
  }

  private RelaykitDeadLettersEndpoint endpoint(RelaykitDeadLettersEndpoint.Replay replay) {
    return new RelaykitDeadLettersEndpoint(store, replay, 100);
  }

  @Test
  @DisplayName("a store that fails a listing is 503 with the error")
  void listFails() {
    ForwardingDeadLetterStore failing = new ForwardingDeadLetterStore(store) {
      @Override
      public List<DeadLetter> list(DeadLetterQuery query) {
        throw new IllegalStateException("database unreachable");
      }
    };
    WebEndpointResponse<Map<String, Object>> r = new RelaykitDeadLettersEndpoint(failing,
        id -> java.util.Optional.empty(), 100).list(null, null, null, null, null, null, null,
        null, null);
    assertThat(r.getStatus()).isEqualTo(503);
    assertThat((String) r.getBody().get("error")).contains("database unreachable");
  }

  @Test
  @DisplayName("a full outbox refuses the replay: 503, and the dead letter stays")
  void outboxFull() {
    InMemoryOutboxStore outbox = new InMemoryOutboxStore(clock,
        new OutboxBound(1, OutboxBound.OverBound.REFUSE));
    outbox.append("orders", Message.builder().id("other").type("t").payload("{}").build());
    DeadLetter d = deadLetter("m1");
    store.add(d);
    RelaykitDeadLettersEndpoint endpoint = endpoint(DeadLetterReplays.choose(store, outbox, null,
        null, Duration.ofSeconds(1), LifecycleListener.noop()));
    WebEndpointResponse<Map<String, Object>> r = endpoint.replay(d.id());
    assertThat(r.getStatus()).isEqualTo(503);
    assertThat((String) r.getBody().get("error")).contains("left in place");
    assertThat(store.find(d.id())).contains(d);
    assertThat(outbox.stats(clock.instant()).unsent()).isEqualTo(1);
  }

  @Test
  @DisplayName("a dead letter its target refuses as bad input is 422, and stays")
  void targetRefuses() {
    DeadLetter d = deadLetter("m1");
    store.add(d);
    RelaykitDeadLettersEndpoint endpoint = endpoint(id -> {
      throw new IllegalArgumentException("message too large");
    });
    WebEndpointResponse<Map<String, Object>> r = endpoint.replay(d.id());
    assertThat(r.getStatus()).isEqualTo(422);
    assertThat((String) r.getBody().get("error")).contains("message too large");
    assertThat(store.find(d.id())).contains(d);
  }

  @Test
  @DisplayName("the application's ReplayTarget wins over the outbox")
  void ownTarget() {
    List<DeadLetter> resent = new ArrayList<>();
    InMemoryOutboxStore outbox = new InMemoryOutboxStore(clock);
    DeadLetter d = deadLetter("m1");
    store.add(d);
    RelaykitDeadLettersEndpoint endpoint = endpoint(DeadLetterReplays.choose(store, outbox, null,
        resent::add, Duration.ofSeconds(1), LifecycleListener.noop()));
    assertThat(endpoint.replay(d.id()).getStatus()).isEqualTo(200);
    assertThat(resent).containsExactly(d);
    assertThat(outbox.stats(clock.instant()).unsent()).isZero();
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a ReplayTarget replay whose mark lapsed and was taken over says so: 200 with"
      + " markLapsed and a warning that another replay may also have sent it")
  void lapsedMarkIsReported() {
    InMemoryDeadLetterStore marks = new InMemoryDeadLetterStore(clock);
    DeadLetter d = deadLetter("m1");
    marks.add(d);
    List<String> resent = new ArrayList<>();
    RelaykitDeadLettersEndpoint.Replay[] other = new RelaykitDeadLettersEndpoint.Replay[1];
    other[0] = DeadLetterReplays.choose(marks, new InMemoryOutboxStore(clock), null,
        x -> resent.add("other"), Duration.ofSeconds(1), LifecycleListener.noop());
    RelaykitDeadLettersEndpoint endpoint = new RelaykitDeadLettersEndpoint(marks,
        DeadLetterReplays.choose(marks, new InMemoryOutboxStore(clock), null, x -> {
          resent.add("slow");
          // The resend outlasts the lease; another replay takes the dead letter over and ends it.
          clock.advance(io.relaykit.deadletter.DeadLetterReplayer.DEFAULT_REPLAY_LEASE
              .plusSeconds(1));
          assertThat(other[0].replay(x.id())).contains(d);
        }, Duration.ofSeconds(1), LifecycleListener.noop()), 100);

    WebEndpointResponse<Map<String, Object>> r = endpoint.replay(d.id());

    assertThat(r.getStatus()).isEqualTo(200);
    assertThat(r.getBody()).containsEntry("markLapsed", true).containsEntry("messageId", "m1");
    assertThat((String) r.getBody().get("warning"))
        .contains("another replay may also have sent it");
    assertThat(resent).containsExactly("slow", "other");
    assertThat(marks.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("an outbox of the application's own: a confirmed publish, a failed one puts the"
      + " dead letter back")
  void publisherFallback() {
    List<String> published = new ArrayList<>();
    boolean[] fail = {true};
    Publisher publisher = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        if (fail[0]) {
          return CompletableFuture.failedFuture(new IllegalStateException("broker down"));
        }
        published.add(destination + ":" + message.id());
        return CompletableFuture.completedFuture(new PublishReceipt(message.id(), destination,
            "0"));
      }

      @Override
      public void close() {}
    };
    ForwardingOutboxStore own = new ForwardingOutboxStore(new InMemoryOutboxStore(clock));
    DeadLetter d = deadLetter("m1");
    store.add(d);
    RelaykitDeadLettersEndpoint endpoint = endpoint(DeadLetterReplays.choose(store, own,
        publisher, null, Duration.ofSeconds(1), LifecycleListener.noop()));
    assertThat(endpoint.replay(d.id()).getStatus()).isEqualTo(503);
    assertThat(store.find(d.id())).contains(d);
    fail[0] = false;
    assertThat(endpoint.replay(d.id()).getStatus()).isEqualTo(200);
    assertThat(published).containsExactly("orders:m1");
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("the maximum page is bounded by core's")
  void maxLimitBounded() {
    assertThatThrownBy(() -> new RelaykitDeadLettersEndpoint(store, id -> null,
        DeadLetterQuery.MAX_LIMIT + 1)).hasMessageContaining("max-limit");
    assertThat(new RelaykitDeadLettersEndpoint(store, id -> null, 3)
        .list(null, null, null, null, null, null, null, null, null).getBody())
        .containsEntry("limit", 3);
  }

  @Test
  @DisplayName("a time range that is empty is 400")
  void badRange() {
    Instant t = Instant.parse("2026-12-01T10:00:00Z");
    WebEndpointResponse<Map<String, Object>> r = endpoint(id -> null).list(null, null, null,
        null, null, t.toString(), t.toString(), null, null);
    assertThat(r.getStatus()).isEqualTo(400);
    assertThat((String) r.getBody().get("error")).contains("failedBefore");
  }

  @Test
  @DisplayName("exceptionClass filters by exact class name and newestFirst=true lists newest"
      + " first")
  void exceptionClassAndNewestFirst() {
    Message m1 = Message.builder().id("m1").type("t").payload("{}").build();
    Message m2 = Message.builder().id("m2").type("t").payload("{}").build();
    Message m3 = Message.builder().id("m3").type("t").payload("{}").build();
    Instant t = clock.instant();
    store.add(new DeadLetter(m1, "orders", null, "r", "java.io.IOException", "x", 5, t, t));
    store.add(new DeadLetter(m2, "orders", null, "r", "java.lang.IllegalStateException", "x", 5,
        t.plusSeconds(1), t.plusSeconds(1)));
    store.add(new DeadLetter(m3, "orders", null, "r", "java.io.IOException", "x", 5,
        t.plusSeconds(2), t.plusSeconds(2)));
    RelaykitDeadLettersEndpoint endpoint = endpoint(id -> null);

    assertThat(messageIds(endpoint.list(null, null, null, null, null, null, null,
        "java.io.IOException", true, null, null, null))).containsExactly("m3", "m1");
    assertThat(endpoint.list(null, null, null, null, null, null, null, "java.io.IOException",
        true, null, null, null).getBody()).containsEntry("total", 2L);
    assertThat(messageIds(endpoint.list(null, null, null, null, null, null, null, "java.io",
        null, null, null, null))).isEmpty();
    assertThat(messageIds(endpoint.list(null, null, null, null, null, null, null, " ", false,
        null, null, null))).containsExactly("m1", "m2", "m3");
    assertThat(messageIds(endpoint.list(null, null, null, null, null, null, null, null, true,
        null, 1, 1))).containsExactly("m2");
  }

  @SuppressWarnings("unchecked")
  private static List<String> messageIds(WebEndpointResponse<Map<String, Object>> r) {
    assertThat(r.getStatus()).isEqualTo(200);
    List<String> out = new ArrayList<>();
    for (Map<String, Object> d : (List<Map<String, Object>>) r.getBody().get("deadLetters")) {
      out.add((String) d.get("messageId"));
    }
    return out;
  }
}

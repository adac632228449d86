package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/** Two operators replaying one dead letter through an application's ReplayTarget at once. */
@DisplayName("dead-letter endpoint: concurrent replays through a ReplayTarget bean")
class RelaykitDeadLettersEndpointRaceTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(clock);

  @Test
  @DisplayName("the second call while the first resends is 409 and resends nothing; the first is"
      + " 200; a third is 404; the target saw the message once")
  void secondCallIs409() throws Exception {
    Message m = Message.builder().id("m1").type("t").payload("{}").build();
    DeadLetter d = new DeadLetter(m, "orders", null, "attempts exhausted", null, null, 5,
        clock.instant(), clock.instant());
    store.add(d);
    List<DeadLetter> resent = new CopyOnWriteArrayList<>();
    CountDownLatch inResend = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    RelaykitDeadLettersEndpoint endpoint = new RelaykitDeadLettersEndpoint(store,
        DeadLetterReplays.choose(store, new InMemoryOutboxStore(clock), null, x -> {
          resent.add(x);
          inResend.countDown();
          if (!release.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not released");
          }
        }, Duration.ofSeconds(1), LifecycleListener.noop()), 100);

    CompletableFuture<WebEndpointResponse<Map<String, Object>>> first =
        CompletableFuture.supplyAsync(() -> endpoint.replay(d.id()));
    assertThat(inResend.await(10, TimeUnit.SECONDS)).isTrue();
    WebEndpointResponse<Map<String, Object>> second = endpoint.replay(d.id());
    release.countDown();

    assertThat(second.getStatus()).isEqualTo(409);
    assertThat((String) second.getBody().get("error")).contains(d.id());
    WebEndpointResponse<Map<String, Object>> done = first.get(10, TimeUnit.SECONDS);
    assertThat(done.getStatus()).isEqualTo(200);
    assertThat(done.getBody()).doesNotContainKey("markLapsed");
    assertThat(endpoint.replay(d.id()).getStatus()).isEqualTo(404);
    assertThat(resent).containsExactly(d);
  }

  @Test
  @DisplayName("resent through the target but the removal keeps failing: 503 that says the message"
      + " was resent (\"resent\": true), not that the replay failed and changed nothing")
  void resentButNotRemoved() {
    Message m = Message.builder().id("m2").type("t").payload("{}").build();
    DeadLetter d = new DeadLetter(m, "orders", null, "attempts exhausted", null, null, 5,
        clock.instant(), clock.instant());
    store.add(d);
    List<DeadLetter> resent = new CopyOnWriteArrayList<>();
    io.relaykit.tck.ForwardingDeadLetterStore failingFinish =
        new io.relaykit.tck.ForwardingDeadLetterStore(store) {
          @Override
          public boolean finishReplay(String id, String token) {
            throw new IllegalStateException("database unreachable");
          }
        };
    RelaykitDeadLettersEndpoint endpoint = new RelaykitDeadLettersEndpoint(failingFinish,
        DeadLetterReplays.choose(failingFinish, new InMemoryOutboxStore(clock), null, resent::add,
            Duration.ofSeconds(1), LifecycleListener.noop()), 100);

    WebEndpointResponse<Map<String, Object>> r = endpoint.replay(d.id());

    assertThat(r.getStatus()).isEqualTo(503);
    assertThat(r.getBody()).containsEntry("resent", true);
    assertThat((String) r.getBody().get("error")).contains("was resent")
        .doesNotContain("it was left in place");
    assertThat(resent).containsExactly(d);
    assertThat(store.find(d.id())).contains(d);
  }
}

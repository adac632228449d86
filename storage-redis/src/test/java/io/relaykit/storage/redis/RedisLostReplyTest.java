package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.idempotency.Claim;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.tck.FaultProxy;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The lost-reply fault on the wire: a {@link FaultProxy} in front of the real Redis forwards each
 * write and discards Redis's answer, so the script runs and the caller times out. The caller then
 * retries on a fresh connection (the one whose answers were dropped is cut), and the test checks
 * by what Redis holds that the outcome is the documented one.
 */
@DisplayName("Redis writes whose replies are dropped on the wire (FaultProxy)")
class RedisLostReplyTest {

  private final RedisTestSupport redis = new RedisTestSupport();
  private final String prefix = "lost-" + UUID.randomUUID() + ":";
  private FaultProxy proxy;
  private RedisStorage throughProxy;
  private RedisStorage direct;

  @BeforeEach
  void open() {
    io.lettuce.core.RedisURI target = io.lettuce.core.RedisURI.create(redis.uri);
    proxy = FaultProxy.to(target.getHost(), target.getPort());
    RedisStorageConfig base = redis.config().keyPrefix(prefix).build();
    throughProxy = RedisStorage.open(base.toBuilder().uri("redis://127.0.0.1:" + proxy.port())
        .commandTimeout(Duration.ofSeconds(2)).build());
    direct = RedisStorage.open(base);
    primeScripts();
  }

  /**
   * Runs every script this class drops replies for once, directly, so the server has them cached.
   * On a Redis that has never run a script (a fresh server, or after {@code SCRIPT FLUSH}), the
   * first {@code EVALSHA} is answered NOSCRIPT; with that answer dropped the script is never sent in
   * full, the write does not run, and the outcome these tests pin (the write ran) would not hold.
   */
  private void primeScripts() {
    String id = "prime-" + UUID.randomUUID();
    direct.versionGuard().advance(id, 1);
    Claim c = direct.idempotencyStore().claim(id, Duration.ofMinutes(1));
    direct.idempotencyStore().complete(c);
    DeadLetterStore store = direct.deadLetterStore(id);
    DeadLetter d = deadLetter();
    store.add(d);
    store.beginReplay(d.id(), "p-1", Duration.ofMinutes(1));
    store.abandonReplay(d.id(), "p-1");
    store.beginReplay(d.id(), "p-2", Duration.ofMinutes(1));
    store.finishReplay(d.id(), "p-2");
  }

  @AfterEach
  void close() {
    throughProxy.close();
    direct.close();
    proxy.close();
    redis.close();
  }

  /** Runs {@code write} with the replies dropped: it must fail; then the link is cut and healed. */
  private void lose(Runnable write) {
    // The connection (re)connects lazily: a read first, so the write is what the proxy drops.
    io.relaykit.tck.Await.until(Duration.ofSeconds(20), "the proxied connection is back", () -> {
      try {
        throughProxy.versionGuard().current("warm-up");
        return true;
      } catch (RedisStorageException e) {
        return false; // still reconnecting after the previous cut
      }
    });
    proxy.dropReplies();
    assertThatThrownBy(write::run).isInstanceOf(RuntimeException.class);
    proxy.heal();
    proxy.cutConnections();
  }

  private static DeadLetter deadLetter() {
    Message m = Message.builder().type("order.paid").key("o-1").payload("{}").build();
    return DeadLetter.of(m, "orders", "attempts exhausted", new IllegalStateException("down"), 5,
        InstantSource.system().instant().minusSeconds(60), InstantSource.system().instant());
  }

  @Test
  @DisplayName("dead letters: add, beginReplay, finishReplay, abandonReplay each ran; the retry on"
      + " a new connection converges (one entry, the same token goes on, gone, free)")
  void deadLetters() {
    String name = "dl-" + UUID.randomUUID();
    DeadLetterStore lossy = throughProxy.deadLetterStore(name);
    DeadLetterStore store = direct.deadLetterStore(name);
    DeadLetter d = deadLetter();

    lose(() -> lossy.add(d));
    assertThat(store.find(d.id())).contains(d);
    store.add(d);
    assertThat(store.count(io.relaykit.deadletter.DeadLetterQuery.all())).isEqualTo(1);

    lose(() -> lossy.beginReplay(d.id(), "t-1", Duration.ofMinutes(1)));
    assertThatThrownBy(() -> store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1)))
        .isInstanceOf(ReplayInProgressException.class);
    assertThat(store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1))).contains(d);

    lose(() -> lossy.abandonReplay(d.id(), "t-1"));
    assertThat(store.abandonReplay(d.id(), "t-1")).isFalse();
    assertThat(store.beginReplay(d.id(), "t-3", Duration.ofMinutes(1))).contains(d);

    lose(() -> lossy.finishReplay(d.id(), "t-3"));
    assertThat(store.finishReplay(d.id(), "t-3")).isFalse();
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("a replay through the proxy whose mark's reply is dropped: the operator's retry on a"
      + " new connection finds the dead letter marked, still stored, and replays it after the mark"
      + " lapses; the message is never lost")
  void replayRetry() {
    String name = "dl-" + UUID.randomUUID();
    DeadLetter d = deadLetter();
    direct.deadLetterStore(name).add(d);
    List<DeadLetter> resent = new ArrayList<>();
    Consumer<DeadLetterStore> replay = s -> new DeadLetterReplayer(s, resent::add,
        LifecycleListener.noop(), InstantSource.system(), Duration.ofMillis(300)).replay(d.id());

    lose(() -> replay.accept(throughProxy.deadLetterStore(name)));
    assertThat(resent).isEmpty();
    assertThat(direct.deadLetterStore(name).find(d.id())).contains(d);

    io.relaykit.tck.Await.until(Duration.ofSeconds(10),
        "the lost mark lapses and the retry replays", () -> {
          try {
            replay.accept(direct.deadLetterStore(name));
            return true;
          } catch (ReplayInProgressException e) {
            return false;
          }
        });
    assertThat(resent).containsExactly(d);
    assertThat(direct.deadLetterStore(name).find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("version guard advance and idempotency complete ran: the retries answer false, and"
      + " current() / status() show the write")
  void versionAndIdempotency() {
    String entity = "e-" + UUID.randomUUID();
    lose(() -> throughProxy.versionGuard().advance(entity, 9));
    assertThat(direct.versionGuard().advance(entity, 9)).isFalse();
    assertThat(direct.versionGuard().current(entity)).hasValue(9);

    String key = "k-" + UUID.randomUUID();
    Claim c = direct.idempotencyStore().claim(key, Duration.ofMinutes(1));
    lose(() -> throughProxy.idempotencyStore().complete(c));
    assertThat(direct.idempotencyStore().complete(c)).isFalse();
    assertThat(direct.idempotencyStore().status(key)).contains(Claim.Status.DONE);
  }
}

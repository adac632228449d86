package io.relaykit.guice;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.inject.Guice;
import com.google.inject.Injector;
import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The {@link OutboxRelay} that {@link RelayKitModule} binds, on the in-memory defaults. */
class OutboxRelayBindingTest {

  private final List<AutoCloseable> toClose = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  private Injector injector(RelayKitConfig config, com.google.inject.Module... more) {
    com.google.inject.Module[] all = new com.google.inject.Module[more.length + 1];
    all[0] = new RelayKitModule(config);
    System.arraycopy(more, 0, all, 1, more.length);
    Injector injector = Guice.createInjector(all);
    toClose.add(injector.getInstance(Publisher.class));
    return injector;
  }

  private OutboxRelay relay(Injector injector) {
    OutboxRelay relay = injector.getInstance(OutboxRelay.class);
    toClose.add(0, () -> relay.close(Duration.ofSeconds(5)));
    return relay;
  }

  private static Message message(String key) {
    Message.Builder b = Message.builder().type("order.placed").payload("{}");
    return key == null ? b.build() : b.key(key).build();
  }

  @Test
  @DisplayName("the injected relay publishes an appended outbox row through the bound transport"
      + " and marks it sent")
  void deliversAnAppendedRow() {
    Injector injector = injector(RelayKitConfig.defaults());
    InMemoryOutboxStore outbox = (InMemoryOutboxStore) injector.getInstance(OutboxStore.class);
    List<String> received = new CopyOnWriteArrayList<>();
    Subscription subscription = injector.getInstance(Subscriber.class).subscribe(
        SubscriptionSpec.builder("orders", "billing").build(),
        delivery -> received.add(delivery.message().id()));
    toClose.add(0, () -> subscription.close(Duration.ofSeconds(5)));
    Message m = message("order-1");
    outbox.append("orders", m);

    OutboxRelay.Batch batch = relay(injector).runOnce();

    assertThat(batch.claimed()).isEqualTo(1);
    assertThat(batch.sent()).isEqualTo(1);
    Await.until(Duration.ofSeconds(10), "the relayed message is delivered",
        () -> !received.isEmpty());
    assertThat(received).containsExactly(m.id());
    OutboxStats stats = outbox.stats(Instant.now());
    assertThat(stats.unsent()).isZero();
    assertThat(stats.sent()).isEqualTo(1);
  }

  @Test
  @DisplayName("the relay is one per injector and is not started by the injector")
  void singletonNotStarted() {
    Injector injector = injector(RelayKitConfig.defaults());
    OutboxRelay relay = relay(injector);

    assertThat(injector.getInstance(OutboxRelay.class)).isSameAs(relay);
    assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
        .doesNotContain("relaykit-outbox-relay-" + relay.owner());
    relay.start();
    assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
        .contains("relaykit-outbox-relay-" + relay.owner());
  }

  @Test
  @DisplayName("relaykit.relay.batch-size and relaykit.relay.lease reach the claim, on the bound"
      + " clock")
  void batchSizeAndLease() {
    FakeClock clock = new FakeClock();
    RecordingOutboxStore outbox = new RecordingOutboxStore();
    Injector injector = injector(RelayKitConfig.builder().relayBatchSize(3)
            .relayLease(Duration.ofMinutes(2)).build(),
        binder -> {
          RelayKitModule.override(binder, OutboxStore.class).toInstance(outbox);
          RelayKitModule.override(binder, InstantSource.class).toInstance(clock);
        });
    for (int i = 0; i < 5; i++) {
      outbox.append("orders", message(null));
    }

    OutboxRelay.Batch first = relay(injector).runOnce();
    OutboxRelay.Batch second = relay(injector).runOnce();

    assertThat(first.claimed()).isEqualTo(3);
    assertThat(first.sent()).isEqualTo(3);
    assertThat(second.claimed()).isEqualTo(2);
    assertThat(outbox.claims).first()
        .isEqualTo(new ClaimCall(3, Duration.ofMinutes(2), clock.instant()));
  }

  @Test
  @DisplayName("without relaykit.relay.batch-size the bound relay's batch size is adaptive: full"
      + " claims that confirm at once double it")
  void adaptiveByDefault() {
    RecordingOutboxStore outbox = new RecordingOutboxStore();
    Injector injector = injector(RelayKitConfig.defaults(),
        binder -> RelayKitModule.override(binder, OutboxStore.class).toInstance(outbox));
    for (int i = 0; i < 350; i++) {
      outbox.append("orders", message(null));
    }
    OutboxRelay relay = relay(injector);
    assertThat(relay.batchSize()).isEqualTo(OutboxRelay.DEFAULT_INITIAL_BATCH);

    assertThat(relay.runOnce().claimed()).isEqualTo(100);
    assertThat(relay.runOnce().claimed()).isEqualTo(200);
    assertThat(relay.batchSize()).isEqualTo(400);
  }

  @Test
  @DisplayName("a lease shorter than the relay's 10 s confirm wait gets a confirm wait inside it")
  void shortLease() {
    Injector injector = injector(RelayKitConfig.builder().relayLease(Duration.ofSeconds(4))
        .build());

    assertThat(relay(injector)).isNotNull();
    assertThat(RelayKitModule.relayConfirmTimeout(Duration.ofSeconds(4)))
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(RelayKitModule.relayConfirmTimeout(Duration.ofSeconds(30)))
        .isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  @DisplayName("relaykit.relay.poll-interval paces a started relay over an idle outbox")
  void pollInterval() {
    RecordingOutboxStore slow = new RecordingOutboxStore();
    OutboxRelay idle = relay(injector(
        RelayKitConfig.builder().relayPollInterval(Duration.ofHours(1)).build(),
        binder -> RelayKitModule.override(binder, OutboxStore.class).toInstance(slow)));
    RecordingOutboxStore fast = new RecordingOutboxStore();
    OutboxRelay busy = relay(injector(
        RelayKitConfig.builder().relayPollInterval(Duration.ofMillis(20)).build(),
        binder -> RelayKitModule.override(binder, OutboxStore.class).toInstance(fast)));

    idle.start();
    busy.start();

    Await.until(Duration.ofSeconds(10), "the 20 ms relay polls again and again",
        () -> fast.claims.size() >= 5);
    Await.holds(Duration.ofSeconds(1), "the 1 h relay claims once, then waits",
        () -> slow.claims.size() <= 1);
    assertThat(slow.claims).hasSize(1);
    assertThat(idle.close(Duration.ofSeconds(5))).as("close wakes the waiting relay").isTrue();
  }

  private record ClaimCall(int max, Duration lease, Instant now) {}

  /** The in-memory outbox, recording every claim's arguments. */
  private static final class RecordingOutboxStore implements OutboxStore {
    final InMemoryOutboxStore delegate = new InMemoryOutboxStore();
    final List<ClaimCall> claims = new CopyOnWriteArrayList<>();

    void append(String destination, Message message) {
      delegate.append(destination, message);
    }

    @Override
    public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
      claims.add(new ClaimCall(max, lease, now));
      return delegate.claim(owner, max, lease, now);
    }

    @Override
    public int markSent(String owner, Collection<Long> sequences, Instant now) {
      return delegate.markSent(owner, sequences, now);
    }

    @Override
    public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
        Instant notBefore, String error) {
      return delegate.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
    }

    @Override
    public boolean markDead(String owner, long sequence) {
      return delegate.markDead(owner, sequence);
    }

    @Override
    public int purgeSent(Instant sentBefore) {
      return delegate.purgeSent(sentBefore);
    }

    @Override
    public OutboxStats stats(Instant now) {
      return delegate.stats(now);
    }
  }

  @Test
  @DisplayName("the relay's lease is relaykit.relay.lease and its retention 7 days, unless a"
      + " backend overrides OutboxRelaySettings")
  void leaseAndRetentionSettings() {
    OutboxRelay relay = relay(injector(RelayKitConfig.builder()
        .relayLease(Duration.ofSeconds(25)).build()));
    assertThat(relay.lease()).isEqualTo(Duration.ofSeconds(25));
    assertThat(relay.retention()).isEqualTo(OutboxRelaySettings.DEFAULT_RETENTION);

    OutboxRelay overridden = relay(injector(RelayKitConfig.defaults(),
        new com.google.inject.AbstractModule() {
          @Override
          protected void configure() {
            RelayKitModule.override(binder(), OutboxRelaySettings.class).toInstance(
                new OutboxRelaySettings(Duration.ofSeconds(9), Duration.ofHours(3)));
          }
        }));
    assertThat(overridden.lease()).isEqualTo(Duration.ofSeconds(9));
    assertThat(overridden.retention()).isEqualTo(Duration.ofHours(3));
  }
}

package io.relaykit.guice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.AbstractModule;
import com.google.inject.CreationException;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.Key;
import com.google.inject.Stage;
import com.google.inject.name.Names;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.ordering.InMemoryVersionGuard;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.InMemoryJournal;
import io.relaykit.queue.QueueJournal;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class RelayKitModuleTest {

  private static Injector injector(RelayKitConfig config, com.google.inject.Module... more) {
    com.google.inject.Module[] all = new com.google.inject.Module[more.length + 1];
    all[0] = new RelayKitModule(config);
    System.arraycopy(more, 0, all, 1, more.length);
    return Guice.createInjector(all);
  }

  @Nested
  @DisplayName("defaults")
  class Defaults {

    private final RelayKitConfig config = RelayKitConfig.builder().retryMaxAttempts(3)
        .retryInitialBackoff(Duration.ofMillis(50)).build();
    private final Injector injector = injector(config);

    @Test
    @DisplayName("the config itself is bound")
    void config() {
      assertThat(injector.getInstance(RelayKitConfig.class)).isSameAs(config);
    }

    @Test
    @DisplayName("time is the system clock")
    void clock() {
      assertThat(injector.getInstance(InstantSource.class)).isEqualTo(InstantSource.system());
    }

    @Test
    @DisplayName("the retry policy is built from the config, once")
    void retryPolicy() {
      RetryPolicy policy = injector.getInstance(RetryPolicy.class);

      assertThat(policy.maxAttempts()).isEqualTo(3);
      assertThat(policy.backoff().initial()).isEqualTo(Duration.ofMillis(50));
      assertThat(injector.getInstance(RetryPolicy.class)).isSameAs(policy);
    }

    @Test
    @DisplayName("every store SPI defaults to its in-memory reference backend, one per injector")
    void inMemoryStores() {
      assertDefault(IdempotencyStore.class, InMemoryIdempotencyStore.class);
      assertDefault(VersionGuard.class, InMemoryVersionGuard.class);
      assertDefault(DeadLetterStore.class, InMemoryDeadLetterStore.class);
      assertDefault(OutboxStore.class, InMemoryOutboxStore.class);
      assertDefault(QueueJournal.class, InMemoryJournal.class);
      assertThat(injector(config).getInstance(VersionGuard.class))
          .as("another injector gets its own state")
          .isNotSameAs(injector.getInstance(VersionGuard.class));
    }

    private <T> void assertDefault(Class<T> spi, Class<? extends T> expected) {
      T instance = injector.getInstance(spi);
      assertThat(instance).as(spi.getSimpleName()).isInstanceOf(expected);
      assertThat(injector.getInstance(spi)).as(spi.getSimpleName() + " is a singleton")
          .isSameAs(instance);
    }

    @Test
    @DisplayName("state written through one injection point is seen through another")
    void sharedState() {
      injector.getInstance(VersionGuard.class).advance("order-1", 3);
      Claim claim = injector.getInstance(IdempotencyStore.class)
          .claim("order-1:paid", Duration.ofMinutes(1));
      injector.getInstance(IdempotencyStore.class).complete(claim);

      assertThat(injector.getInstance(VersionGuard.class).current("order-1")).hasValue(3);
      assertThat(injector.getInstance(IdempotencyStore.class).status("order-1:paid"))
          .contains(Claim.Status.DONE);
    }

    @Test
    @DisplayName("publisher and subscriber are one in-process transport: a publish is delivered")
    void inProcessTransport() throws Exception {
      Publisher publisher = injector.getInstance(Publisher.class);
      Subscriber subscriber = injector.getInstance(Subscriber.class);
      assertThat(publisher).isInstanceOf(InProcessTransport.class).isSameAs(subscriber);
      List<String> received = new CopyOnWriteArrayList<>();
      Subscription subscription = subscriber.subscribe(
          SubscriptionSpec.builder("orders", "billing").build(),
          delivery -> received.add(delivery.message().id()));
      Message m = Message.builder().type("order.placed").payload("{}").build();

      publisher.publish("orders", m).get();
      Await.until(Duration.ofSeconds(10), "the message is delivered", () -> !received.isEmpty());

      assertThat(received).containsExactly(m.id());
      subscription.close(Duration.ofSeconds(5));
      publisher.close();
    }

    @Test
    @DisplayName("the transport dead-letters into the bound DeadLetterStore, with the bound clock")
    void transportUsesBoundStores() throws Exception {
      FakeClock clock = new FakeClock();
      Injector injector = injector(config,
          binder -> RelayKitModule.override(binder, InstantSource.class).toInstance(clock));
      Subscriber subscriber = injector.getInstance(Subscriber.class);
      subscriber.subscribe(SubscriptionSpec.builder("orders", "billing").build(), delivery -> {
        throw new PermanentFailureException("bad order");
      });
      Message m = Message.builder().type("order.placed").payload("{}").build();

      injector.getInstance(Publisher.class).publish("orders", m).get();
      DeadLetterStore deadLetters = injector.getInstance(DeadLetterStore.class);
      Await.until(Duration.ofSeconds(10), "the message is dead-lettered",
          () -> deadLetters.list(DeadLetterQuery.all().withMessageId(m.id()))
              .stream().findFirst().isPresent());

      assertThat(deadLetters.list(DeadLetterQuery.all().withMessageId(m.id()))
          .stream().findFirst().orElseThrow().lastFailureAt()).isEqualTo(clock.instant());
      assertThat(deadLetters.list(DeadLetterQuery.all().withMessageId(m.id()))
          .stream().findFirst().orElseThrow().reason()).contains("bad order");
      subscriber.close();
    }

    @Test
    @DisplayName("the lifecycle listener is a shared no-op")
    void listener() {
      LifecycleListener listener = injector.getInstance(LifecycleListener.class);

      listener.on(new LifecycleEvent(LifecycleEvent.Stage.ENQUEUED, "m-1", "t-1", "test",
          FakeClock.EPOCH, "x"));
      assertThat(injector.getInstance(LifecycleListener.class)).isSameAs(listener);
    }

    @Test
    @DisplayName("the metrics listener is MetricsListener.noop(), so the relay samples nothing")
    void metricsListener() {
      assertThat(injector.getInstance(MetricsListener.class)).isSameAs(MetricsListener.noop());
    }
  }

  @Nested
  @DisplayName("overrides")
  class Overrides {

    @Test
    @DisplayName("an application module's override wins over the default")
    void applicationOverrideWins() {
      FakeClock clock = new FakeClock();
      LifecycleLog log = new LifecycleLog(10);
      Injector injector = injector(RelayKitConfig.defaults(), new AbstractModule() {
        @Override
        protected void configure() {
          RelayKitModule.override(binder(), InstantSource.class).toInstance(clock);
          RelayKitModule.override(binder(), LifecycleListener.class).toInstance(log);
        }
      });

      assertThat(injector.getInstance(InstantSource.class)).isSameAs(clock);
      assertThat(injector.getInstance(LifecycleListener.class)).isSameAs(log);
      assertThat(injector.getInstance(RetryPolicy.class).maxAttempts())
          .as("what is not overridden keeps its default").isEqualTo(5);
    }

    @Test
    @DisplayName("an overriding MetricsListener hears the relay's outbox backlog and dead-letter"
        + " depth and the in-process transport's handler durations, and a spec's own listener"
        + " replaces it for that subscription")
    void metricsOverrideReachesRelayAndTransport() throws Exception {
      List<String> heard = new CopyOnWriteArrayList<>();
      List<String> own = new CopyOnWriteArrayList<>();
      MetricsListener metrics = new MetricsListener() {
        @Override
        public void backlogDepth(String destination, long depth) {
          heard.add("backlog " + destination + "=" + depth);
        }

        @Override
        public void deadLetterDepth(String destination, long depth) {
          heard.add("dead letters " + destination + "=" + depth);
        }

        @Override
        public void handlerDuration(String destination, String group, Duration d,
            boolean failed) {
          heard.add("handler " + destination + " " + group + " failed=" + failed);
        }
      };
      MetricsListener spec = new MetricsListener() {
        @Override
        public void handlerDuration(String destination, String group, Duration d,
            boolean failed) {
          own.add("handler " + destination + " " + group);
        }
      };
      Injector injector = injector(RelayKitConfig.defaults(),
          binder -> RelayKitModule.override(binder, MetricsListener.class).toInstance(metrics));
      assertThat(injector.getInstance(MetricsListener.class)).isSameAs(metrics);
      Subscriber subscriber = injector.getInstance(Subscriber.class);
      Subscription a = subscriber.subscribe(SubscriptionSpec.builder("orders", "billing").build(),
          delivery -> { });
      Subscription b = subscriber.subscribe(SubscriptionSpec.builder("orders", "audit")
          .metrics(spec).build(), delivery -> { });
      injector.getInstance(DeadLetterStore.class).add(io.relaykit.deadletter.DeadLetter.of(
          Message.builder().type("t").payload("x").build(), "orders", "permanent", null, 1,
          FakeClock.EPOCH, FakeClock.EPOCH));
      ((InMemoryOutboxStore) injector.getInstance(OutboxStore.class)).append("orders",
          Message.builder().type("t").payload("{}").build());
      OutboxRelay relay = injector.getInstance(OutboxRelay.class);
      try {
        relay.runOnce();
        Await.until(Duration.ofSeconds(10), "the relay's samples and the billing handler",
            () -> heard.containsAll(List.of("backlog outbox=1", "dead letters all=1",
                "handler orders billing failed=false")) && !own.isEmpty());
        assertThat(own).containsExactly("handler orders audit");
        assertThat(heard).as("the audit subscription reports to its own listener only")
            .noneMatch(h -> h.contains("audit"));
      } finally {
        relay.close();
        a.close(Duration.ofSeconds(5));
        b.close(Duration.ofSeconds(5));
        subscriber.close();
      }
    }

    @Test
    @DisplayName("the in-memory defaults run on an overriding clock: retention ends as it advances")
    void defaultsFollowTheBoundClock() {
      FakeClock clock = new FakeClock();
      Injector injector = injector(
          RelayKitConfig.builder().idempotencyRetention(Duration.ofMinutes(10)).build(),
          binder -> RelayKitModule.override(binder, InstantSource.class).toInstance(clock));
      IdempotencyStore store = injector.getInstance(IdempotencyStore.class);
      store.complete(store.claim("order-1:paid", Duration.ofSeconds(30)));

      clock.advance(Duration.ofMinutes(9));
      assertThat(store.claim("order-1:paid", Duration.ofSeconds(30)).status())
          .isEqualTo(Claim.Status.DONE);
      clock.advance(Duration.ofMinutes(2));
      assertThat(store.claim("order-1:paid", Duration.ofSeconds(30)).status())
          .as("retention over: the key may be claimed again").isEqualTo(Claim.Status.CLAIMED);
    }

    @Test
    @DisplayName("two overrides of one SPI fail injector creation")
    void twoOverridesConflict() {
      AbstractModule a = new AbstractModule() {
        @Override
        protected void configure() {
          RelayKitModule.override(binder(), InstantSource.class).toInstance(new FakeClock());
        }
      };
      AbstractModule b = new AbstractModule() {
        @Override
        protected void configure() {
          RelayKitModule.override(binder(), InstantSource.class).toInstance(new FakeClock());
        }
      };

      assertThatThrownBy(() -> injector(RelayKitConfig.defaults(), a, b))
          .isInstanceOf(CreationException.class)
          .hasMessageContaining("InstantSource");
    }
  }

  @Nested
  @DisplayName("backend selection")
  class Selection {

    @Test
    @DisplayName("relaykit.storage picks the registered provider, whose module overrides the SPI")
    void storageSelected() {
      Injector injector = injector(RelayKitConfig.builder().storage("fake")
          .set(FakeStorageBackend.LABEL, "blue").build());

      VersionGuard guard = injector.getInstance(VersionGuard.class);
      assertThat(guard).isInstanceOf(FakeStorageBackend.LabelledVersionGuard.class);
      assertThat(((FakeStorageBackend.LabelledVersionGuard) guard).label).isEqualTo("blue");
      assertThat(injector.getInstance(VersionGuard.class)).as("singleton").isSameAs(guard);
      assertThat(guard.advance("order-1", 2)).isTrue();
      assertThat(injector.getInstance(VersionGuard.class).current("order-1")).hasValue(2);
      assertThat(injector.getInstance(IdempotencyStore.class))
          .as("what the backend does not provide stays in memory")
          .isInstanceOf(InMemoryIdempotencyStore.class);
    }

    @Test
    @DisplayName("in Stage.PRODUCTION, which builds every singleton at once, the override wins")
    void productionStage() {
      Injector injector = Guice.createInjector(Stage.PRODUCTION, new RelayKitModule(
          RelayKitConfig.builder().storage("fake").set(FakeStorageBackend.LABEL, "eager").build()));

      assertThat(injector.getInstance(VersionGuard.class))
          .isInstanceOf(FakeStorageBackend.LabelledVersionGuard.class);
      assertThat(injector.getInstance(OutboxStore.class)).isInstanceOf(InMemoryOutboxStore.class);
      injector.getInstance(Publisher.class).close();
    }

    @Test
    @DisplayName("a backend's private helpers stay private; only its SPI is visible")
    void privateModuleExposesOnlyTheSpi() {
      Injector injector = injector(RelayKitConfig.builder().storage("fake")
          .set(FakeStorageBackend.LABEL, "blue").build());

      assertThat(injector.getExistingBinding(Key.get(String.class, Names.named("fake.label"))))
          .isNull();
      assertThat(injector.getExistingBinding(FakeStorageBackend.EXPOSED)).isNotNull();
    }

    @Test
    @DisplayName("relaykit.transport picks the registered transport the same way")
    void transportSelected() {
      Injector injector = injector(RelayKitConfig.from(new java.util.Properties(),
          java.util.Map.of("RELAYKIT_TRANSPORT", "loopback")));
      Publisher publisher = injector.getInstance(Publisher.class);
      Message m = Message.builder().type("order.placed")
          .payload("{}".getBytes(StandardCharsets.UTF_8)).build();

      assertThat(publisher.publish("orders", m).join().destination()).isEqualTo("orders");
      assertThat(((LoopbackTransportBackend.RecordingPublisher) publisher).published)
          .containsExactly(m);
    }

    @Test
    @DisplayName("an unknown backend fails when the module is built, listing the known names")
    void unknownBackend() {
      RelayKitConfig config = RelayKitConfig.builder().storage("h3").build();

      assertThatThrownBy(() -> new RelayKitModule(config))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unknown storage backend 'h3'")
          .hasMessageContaining("known: fake, memory");
    }

    @Test
    @DisplayName("a chosen backend's missing setting fails when the module is built, naming it")
    void backendSettingMissing() {
      RelayKitConfig config = RelayKitConfig.builder().storage("fake").build();

      assertThatThrownBy(() -> new RelayKitModule(config))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.fake.label")
          .hasMessageContaining("RELAYKIT_FAKE_LABEL");
    }
  }
}

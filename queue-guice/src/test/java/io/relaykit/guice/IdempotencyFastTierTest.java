package io.relaykit.guice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.Module;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.SwitchableIdempotencyStore;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@code relaykit.idempotency.fast-tier}: one backend's store answers repeats in front of the
 * storage backend's, composed by queue-guice, so neither adapter knows the other.
 */
class IdempotencyFastTierTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Backends BACKENDS =
      Backends.of(List.of(new FakeStorageBackend(), new CacheTierBackend()));

  private final FakeClock clock = new FakeClock();
  /** Stands in for the database: what a storage backend binds as its idempotency store. */
  private final InMemoryIdempotencyStore durable =
      new InMemoryIdempotencyStore(clock, Duration.ofDays(1));

  private Injector injector(RelayKitConfig config) {
    Module storage = binder -> {
      RelayKitModule.override(binder, InstantSource.class).toInstance(clock);
      RelayKitModule.overrideStorageIdempotency(binder).toInstance(durable);
    };
    return Guice.createInjector(new RelayKitModule(config, BACKENDS), storage);
  }

  @Test
  @DisplayName("without a fast tier the SPI is the storage backend's store itself")
  void noFastTier() {
    Injector injector = injector(RelayKitConfig.defaults());

    assertThat(injector.getInstance(IdempotencyStore.class)).isSameAs(durable);
  }

  @Test
  @DisplayName("with no storage override the SPI keeps its in-memory default")
  void inMemoryDefault() {
    Injector injector = Guice.createInjector(new RelayKitModule(RelayKitConfig.defaults(),
        BACKENDS));

    assertThat(injector.getInstance(IdempotencyStore.class))
        .isInstanceOf(InMemoryIdempotencyStore.class)
        .isSameAs(injector.getInstance(IdempotencyStore.class));
  }

  @Test
  @DisplayName("fast-tier=cache makes the SPI a tiered store: DONE is written to the durable tier"
      + " first, then the fast tier, and a repeat is answered DONE")
  void tiered() {
    Injector injector = injector(RelayKitConfig.builder().idempotencyFastTier("cache").build());
    IdempotencyStore store = injector.getInstance(IdempotencyStore.class);
    SwitchableIdempotencyStore fast =
        injector.getInstance(SwitchableIdempotencyStore.class);

    assertThat(store).isInstanceOf(TieredIdempotencyStore.class)
        .isSameAs(injector.getInstance(TieredIdempotencyStore.class))
        .isSameAs(injector.getInstance(IdempotencyStore.class));
    Claim claim = store.claim("order-1:paid", LEASE);
    assertThat(claim.status()).isEqualTo(Claim.Status.CLAIMED);
    assertThat(durable.status("order-1:paid")).as("the durable tier holds every claim")
        .contains(Claim.Status.CLAIMED);
    assertThat(store.complete(claim)).isTrue();

    assertThat(durable.status("order-1:paid")).contains(Claim.Status.DONE);
    assertThat(fast.delegate().status("order-1:paid")).contains(Claim.Status.DONE);
    assertThat(store.claim("order-1:paid", LEASE).status()).isEqualTo(Claim.Status.DONE);
  }

  @Test
  @DisplayName("while the fast tier is down the durable tier alone decides, and on the bound clock"
      + " the fast tier is tried again")
  void fastTierDown() {
    Injector injector = injector(RelayKitConfig.builder().idempotencyFastTier("cache").build());
    TieredIdempotencyStore store = injector.getInstance(TieredIdempotencyStore.class);
    SwitchableIdempotencyStore fast =
        injector.getInstance(SwitchableIdempotencyStore.class);
    store.complete(store.claim("order-1:paid", LEASE));

    fast.down(true);
    Claim other = store.claim("order-2:paid", LEASE);

    assertThat(other.status()).isEqualTo(Claim.Status.CLAIMED);
    assertThat(store.fastTierInUse()).isFalse();
    assertThat(store.claim("order-2:paid", LEASE).status())
        .as("the durable claim excludes a second worker").isEqualTo(Claim.Status.IN_PROGRESS);
    assertThat(store.claim("order-1:paid", LEASE).status()).isEqualTo(Claim.Status.DONE);

    fast.down(false);
    clock.advance(Duration.ofSeconds(1));
    store.claim("order-3:paid", LEASE);
    assertThat(store.fastTierInUse()).as("retried after 1 s on the injector's clock").isTrue();
  }

  @Test
  @DisplayName("none means no fast tier")
  void none() {
    Injector injector = injector(RelayKitConfig.builder().idempotencyFastTier("none").build());

    assertThat(injector.getInstance(IdempotencyStore.class)).isSameAs(durable);
  }

  @Test
  @DisplayName("a fast tier that is the storage backend itself is rejected when the module is"
      + " built")
  void fastTierIsStorage() {
    RelayKitConfig config = RelayKitConfig.builder().storage("cache").idempotencyFastTier("cache")
        .build();

    assertThatThrownBy(() -> new RelayKitModule(config, BACKENDS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.idempotency.fast-tier names the storage backend itself")
        .hasMessageContaining("'cache'");
  }

  @Test
  @DisplayName("a backend that cannot be a fast tier is rejected, naming the key")
  void notAFastTier() {
    RelayKitConfig config = RelayKitConfig.builder().idempotencyFastTier("fake").build();

    assertThatThrownBy(() -> new RelayKitModule(config, BACKENDS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("storage backend 'fake' (relaykit.idempotency.fast-tier) cannot"
            + " serve as an idempotency fast tier");
  }

  @Test
  @DisplayName("an unknown fast tier is rejected under its own key, listing the known backends")
  void unknownFastTier() {
    RelayKitConfig config = RelayKitConfig.builder().idempotencyFastTier("redis").build();

    assertThatThrownBy(() -> new RelayKitModule(config, BACKENDS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown storage backend 'redis' (relaykit.idempotency.fast-tier)")
        .hasMessageContaining("known: cache, fake, memory");
  }
}

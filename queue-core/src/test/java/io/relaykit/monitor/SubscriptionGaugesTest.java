package io.relaykit.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class SubscriptionGaugesTest {

  private static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

  /** The wall clock, which tests may step either way; the ticker only moves forward. */
  private final AtomicReference<Instant> wall = new AtomicReference<>(START);
  private final AtomicLong ticker = new AtomicLong(1_000);

  private SubscriptionGauges.Builder gauges() {
    return SubscriptionGauges.builder().clock(wall::get).ticker(ticker::get);
  }

  private void elapse(Duration d) {
    ticker.addAndGet(d.toNanos());
    wall.updateAndGet(t -> t.plus(d));
  }

  private void stepWall(Duration d) {
    wall.updateAndGet(t -> t.plus(d));
  }

  @Nested
  @DisplayName("figures")
  class Figures {

    @Test
    @DisplayName("the latest lag and in-flight count of each (destination, group) are read, with"
        + " the time of the latest report")
    void latestPerPair() {
      SubscriptionGauges g = gauges().build();
      g.consumerLag("orders", "billing", 5);
      g.inFlight("orders", "billing", 2);
      elapse(Duration.ofSeconds(3));
      g.consumerLag("orders", "billing", 7);
      g.consumerLag("orders", "shipping", 1);

      assertThat(g.read()).containsExactly(
          new SubscriptionStatus("consumer", "orders", "billing", 7, 2,
              START.plusSeconds(3)),
          new SubscriptionStatus("consumer", "orders", "shipping", 1, SubscriptionStatus.UNKNOWN,
              START.plusSeconds(3)));
    }

    @Test
    @DisplayName("a figure never reported, or reported negative, reads UNKNOWN; a pair without a"
        + " group is kept apart and sorted first")
    void unknownAndNoGroup() {
      SubscriptionGauges g = gauges().kind("rabbitmq-queue").build();
      g.inFlight("q", "g", 3);
      g.consumerLag("q", null, -5);
      List<SubscriptionStatus> read = g.read();
      assertThat(read).extracting(SubscriptionStatus::group).containsExactly(null, "g");
      assertThat(read.get(0).lag()).isEqualTo(SubscriptionStatus.UNKNOWN);
      assertThat(read.get(0).inFlight()).isEqualTo(SubscriptionStatus.UNKNOWN);
      assertThat(read.get(1).lag()).isEqualTo(SubscriptionStatus.UNKNOWN);
      assertThat(read.get(1).inFlight()).isEqualTo(3);
      assertThat(read).allSatisfy(s -> assertThat(s.kind()).isEqualTo("rabbitmq-queue"));
    }

    @Test
    @DisplayName("other callbacks (partition lag, durations, dead letters) keep nothing; a null or"
        + " blank destination is ignored and counted")
    void othersIgnored() {
      SubscriptionGauges g = gauges().build();
      g.partitionLag("t", "g", 0, 9);
      g.handlerDuration("t", "g", Duration.ofMillis(3), false);
      g.deadLettered("t", "g");
      g.backlogDepth("outbox", 4);
      g.consumerLag(null, "g", 1);
      g.inFlight(" ", "g", 1);
      assertThat(g.read()).isEmpty();
      assertThat(g.size()).isZero();
      assertThat(g.invalid()).isEqualTo(2);
    }

    @Test
    @DisplayName("a consumer that stopped for good is dropped at once; reading twice changes"
        + " nothing")
    void failedConsumerDropped() {
      SubscriptionGauges g = gauges().build();
      g.consumerLag("t", "a", 1);
      g.consumerLag("t", "b", 2);
      g.consumerFailed("t", "a", new IllegalStateException("fenced"));
      g.consumerFailed("t", "unknown", new IllegalStateException("x"));
      g.consumerFailed(null, "a", new IllegalStateException("x"));
      assertThat(g.read()).extracting(SubscriptionStatus::group).containsExactly("b");
      assertThat(g.read()).isEqualTo(g.read());
      assertThat(g.size()).isEqualTo(1);
    }

    @Test
    @DisplayName("wired through a composite listener next to another, it sees what a runtime"
        + " reports")
    void throughComposite() {
      SubscriptionGauges g = gauges().build();
      MetricsListener metrics = MetricsListener.composite(List.of(new MetricsListener() {
        @Override
        public void consumerLag(String destination, String group, long lag) {
          throw new IllegalStateException("a broken exporter");
        }
      }, g));
      metrics.consumerLag("t", "g", 11);
      metrics.inFlight("t", "g", 4);
      assertThat(g.read()).singleElement().satisfies(s -> {
        assertThat(s.lag()).isEqualTo(11);
        assertThat(s.inFlight()).isEqualTo(4);
      });
    }
  }

  @Nested
  @DisplayName("expiry")
  class Expiry {

    @Test
    @DisplayName("a pair silent for expireAfter is dropped by the next read; one that reported"
        + " within it stays")
    void silentPairsDropped() {
      SubscriptionGauges g = gauges().expireAfter(Duration.ofMinutes(1)).build();
      g.consumerLag("t", "old", 1);
      elapse(Duration.ofSeconds(30));
      g.consumerLag("t", "young", 2);
      elapse(Duration.ofSeconds(29));
      assertThat(g.read()).hasSize(2);
      elapse(Duration.ofSeconds(1));
      assertThat(g.read()).extracting(SubscriptionStatus::group).containsExactly("young");
      assertThat(g.size()).isEqualTo(1);
      g.inFlight("t", "old", 0); // reports again: back, with only the new figure
      assertThat(g.read()).filteredOn(s -> "old".equals(s.group())).singleElement()
          .satisfies(s -> assertThat(s.lag()).isEqualTo(SubscriptionStatus.UNKNOWN));
    }

    @Test
    @DisplayName("expiry is measured on the ticker: the wall clock stepping a day forward or back"
        + " drops nothing, and readAt shows the wall time of the report")
    void wallStepsChangeNothing() {
      SubscriptionGauges g = gauges().expireAfter(Duration.ofMinutes(1)).build();
      g.consumerLag("t", "g", 1);
      stepWall(Duration.ofDays(1));
      assertThat(g.read()).singleElement()
          .satisfies(s -> assertThat(s.readAt()).isEqualTo(START));
      stepWall(Duration.ofDays(-2));
      g.consumerLag("t", "g", 2);
      assertThat(g.read()).singleElement().satisfies(s -> {
        assertThat(s.lag()).isEqualTo(2);
        assertThat(s.readAt()).isEqualTo(START.minus(Duration.ofDays(1)));
      });
    }
  }

  @Nested
  @DisplayName("bounds")
  class Bounds {

    @Test
    @DisplayName("past maxSubscriptions a new pair is refused and counted; kept pairs still"
        + " update")
    void fullTableRefuses() {
      SubscriptionGauges g = gauges().maxSubscriptions(3).build();
      for (int i = 0; i < 10; i++) {
        g.consumerLag("t", "g" + i, i);
      }
      assertThat(g.size()).isEqualTo(3);
      assertThat(g.refused()).isEqualTo(7);
      g.consumerLag("t", "g0", 100);
      g.inFlight("t", "g9", 1);
      assertThat(g.read()).extracting(SubscriptionStatus::group).containsExactly("g0", "g1", "g2");
      assertThat(g.read().get(0).lag()).isEqualTo(100);
      assertThat(g.refused()).isEqualTo(8);
      assertThat(g.toString()).contains("size=3/3", "refused=8");
    }

    @Test
    @DisplayName("a full table makes room by dropping expired pairs, sweeping at most once per"
        + " expireAfter, without anyone reading")
    void fullTableSweepsExpired() {
      SubscriptionGauges g = gauges().maxSubscriptions(2).expireAfter(Duration.ofMinutes(1))
          .build();
      g.consumerLag("t", "a", 1);
      elapse(Duration.ofSeconds(50));
      g.consumerLag("t", "b", 1);
      elapse(Duration.ofSeconds(10)); // a expired, b not
      g.consumerLag("t", "c", 1); // sweeps: a goes, c takes its place
      assertThat(g.size()).isEqualTo(2);
      assertThat(g.refused()).isZero();
      elapse(Duration.ofSeconds(50)); // b expired, but the last sweep was 50 s ago
      g.consumerLag("t", "c", 2);
      g.consumerLag("t", "d", 1);
      assertThat(g.refused()).isEqualTo(1);
      elapse(Duration.ofSeconds(10));
      g.consumerLag("t", "d", 1);
      assertThat(g.read()).extracting(SubscriptionStatus::group).containsExactly("c", "d");
    }

    @Test
    @DisplayName("many threads reporting 4 096 pairs while others read: the table never holds"
        + " more than its bound, every report is kept or refused, and each kept pair holds the"
        + " last value its thread wrote")
    void concurrentReports() throws Exception {
      SubscriptionGauges g = gauges().maxSubscriptions(1024).build();
      int threads = 4;
      int pairsPerThread = 1024;
      int rounds = 20;
      ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
      CountDownLatch start = new CountDownLatch(1);
      AtomicBoolean writing = new AtomicBoolean(true);
      try {
        List<Future<?>> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int thread = t;
          writers.add(pool.submit(() -> {
            start.await();
            for (int r = 1; r <= rounds; r++) {
              for (int p = 0; p < pairsPerThread; p++) {
                g.consumerLag("topic-" + thread, "group-" + p, r);
                g.inFlight("topic-" + thread, "group-" + p, r);
              }
            }
            return null;
          }));
        }
        Future<Integer> reader = pool.submit(() -> {
          start.await();
          int maxSeen = 0;
          while (writing.get()) {
            List<SubscriptionStatus> read = g.read();
            maxSeen = Math.max(maxSeen, read.size());
            assertThat(g.size()).isLessThanOrEqualTo(1024);
          }
          return maxSeen;
        });
        start.countDown();
        for (Future<?> w : writers) {
          w.get(60, TimeUnit.SECONDS);
        }
        writing.set(false);
        assertThat(reader.get(60, TimeUnit.SECONDS)).isLessThanOrEqualTo(1024);
      } finally {
        pool.shutdownNow();
      }
      List<SubscriptionStatus> read = g.read();
      assertThat(read).hasSize(1024);
      assertThat(g.size()).isEqualTo(1024);
      assertThat(read).allSatisfy(s -> {
        assertThat(s.lag()).isEqualTo(rounds);
        assertThat(s.inFlight()).isEqualTo(rounds);
      });
      long reports = 2L * threads * pairsPerThread * rounds;
      long refusedPairs = threads * pairsPerThread - 1024;
      // a refused pair is refused on each of its reports; a kept pair never is
      assertThat(g.refused()).isEqualTo(refusedPairs * 2 * rounds);
      assertThat(reports - g.refused()).isEqualTo(1024L * 2 * rounds);
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("defaults: kind consumer, 1 024 subscriptions, five minutes")
    void defaults() {
      assertThat(SubscriptionGauges.DEFAULT_KIND).isEqualTo("consumer");
      assertThat(SubscriptionGauges.DEFAULT_MAX_SUBSCRIPTIONS).isEqualTo(1024);
      assertThat(SubscriptionGauges.DEFAULT_EXPIRE_AFTER).isEqualTo(Duration.ofMinutes(5));
      SubscriptionGauges g = SubscriptionGauges.create();
      g.consumerLag("t", "g", 1);
      assertThat(g.read()).singleElement()
          .satisfies(s -> assertThat(s.kind()).isEqualTo("consumer"));
      assertThat(g.toString()).contains("/1024");
    }

    @Test
    @DisplayName("bad settings are refused naming the field and the value")
    void badSettings() {
      assertThatThrownBy(() -> gauges().kind(" ").build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kind");
      assertThatThrownBy(() -> gauges().maxSubscriptions(0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("maxSubscriptions").hasMessageContaining("0");
      assertThatThrownBy(() -> gauges().maxSubscriptions(65_537).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("65537");
      assertThatThrownBy(() -> gauges().expireAfter(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expireAfter");
      assertThatThrownBy(() -> gauges().clock(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
      assertThatThrownBy(() -> gauges().ticker(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ticker");
    }
  }
}

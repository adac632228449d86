package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.ordering.VersionGuard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link VersionGuard} keeps: subclass it and implement {@link #createGuard}.
 * Entity ids carry a random prefix, so a shared backend is fine.
 */
public abstract class VersionGuardContract {

  /** For a subclass that binds the kit to one backend. */
  protected VersionGuardContract() {}

  private VersionGuard guard;
  private final String prefix = "tck-" + UUID.randomUUID() + ":";

  /**
   * A new guard; called before every test. It may share a backend with other tests.
   *
   * @return a guard to check
   */
  protected abstract VersionGuard createGuard();

  @BeforeEach
  void createFreshGuard() {
    guard = createGuard();
  }

  /**
   * The guard under test.
   *
   * @return this test's guard, from {@link #createGuard()}
   */
  protected VersionGuard guard() {
    return guard;
  }

  private String entity(String name) {
    return prefix + name;
  }

  @Nested
  @DisplayName("advance")
  class Advance {

    @Test
    @DisplayName("the first version of an entity is applied and stored")
    void firstApplies() {
      assertThat(guard.current(entity("a"))).isEmpty();

      assertThat(guard.advance(entity("a"), 7)).isTrue();

      assertThat(guard.current(entity("a"))).hasValue(7);
    }

    @Test
    @DisplayName("entity ids with any characters are kept apart, including braces: \"a\" and"
        + " \"{a}\" have their own versions")
    void bracesKeptApart() {
      String plain = entity("a");
      String braced = "{" + plain + "}";
      assertThat(guard.advance(plain, 9)).isTrue();

      assertThat(guard.current(braced)).isEmpty();
      assertThat(guard.advance(braced, 1)).isTrue();
      assertThat(guard.advance(plain + "}", 2)).isTrue();
      assertThat(guard.current(plain)).hasValue(9);
      assertThat(guard.current(braced)).hasValue(1);
    }

    @Test
    @DisplayName("entity ids differing only in case, leading or trailing spaces, a no-break space"
        + " or a Unicode hyphen are distinct entities; 512 characters (also as 256 surrogate"
        + " pairs) work")
    void identityEdgeCases() {
      String base = entity("Order-x");
      java.util.List<String> ids = java.util.List.of(base,
          base.toLowerCase(java.util.Locale.ROOT), base.toUpperCase(java.util.Locale.ROOT),
          base + " ", base + "  ", " " + base, base + "\u00a0", base.replace("-", "\u2010"));
      for (String id : ids) {
        assertThat(guard.advance(id, 10)).as("'%s' first seen", id).isTrue();
      }
      for (String id : ids) {
        assertThat(guard.advance(id, 5)).as("'%s' stale", id).isFalse();
        assertThat(guard.current(id)).as("'%s'", id).hasValue(10);
      }
      String longest = (base + "k".repeat(512)).substring(0, 512);
      assertThat(guard.advance(longest, 1)).isTrue();
      assertThat(guard.advance(longest.substring(0, 511), 1)).isTrue();
      assertThat(guard.current(longest)).hasValue(1);
      String astral = "\uD83D\uDE00".repeat(200) + base;
      assertThat(guard.advance(astral, 2)).isTrue();
      assertThat(guard.current(astral)).hasValue(2);
    }

    @Test
    @DisplayName("version zero is a valid first version")
    void zeroIsValid() {
      assertThat(guard.advance(entity("a"), 0)).isTrue();
      assertThat(guard.current(entity("a"))).hasValue(0);
      assertThat(guard.advance(entity("a"), 0)).isFalse();
    }

    @Test
    @DisplayName("a newer version is applied")
    void newerApplies() {
      guard.advance(entity("a"), 7);

      assertThat(guard.advance(entity("a"), 8)).isTrue();
      assertThat(guard.advance(entity("a"), 1_000_000_000_000L)).isTrue();

      assertThat(guard.current(entity("a"))).hasValue(1_000_000_000_000L);
    }

    @Test
    @DisplayName("an equal version is rejected: a redelivered update applies once")
    void equalRejected() {
      guard.advance(entity("a"), 7);

      assertThat(guard.advance(entity("a"), 7)).isFalse();
      assertThat(guard.current(entity("a"))).hasValue(7);
    }

    @Test
    @DisplayName("an older version is rejected and the stored version stays")
    void olderRejected() {
      guard.advance(entity("a"), 7);

      assertThat(guard.advance(entity("a"), 6)).isFalse();
      assertThat(guard.advance(entity("a"), 0)).isFalse();
      assertThat(guard.current(entity("a"))).hasValue(7);
    }

    @Test
    @DisplayName("Long.MAX_VALUE is stored exactly and nothing passes it")
    void maxValue() {
      assertThat(guard.advance(entity("a"), Long.MAX_VALUE - 1)).isTrue();
      assertThat(guard.advance(entity("a"), Long.MAX_VALUE)).isTrue();

      assertThat(guard.current(entity("a"))).hasValue(Long.MAX_VALUE);
      assertThat(guard.advance(entity("a"), Long.MAX_VALUE)).isFalse();
    }

    @Test
    @DisplayName("entities are independent: one entity's version does not gate another's")
    void perEntity() {
      guard.advance(entity("a"), 100);

      assertThat(guard.advance(entity("b"), 1)).isTrue();
      assertThat(guard.advance(entity("a"), 50)).isFalse();

      assertThat(guard.current(entity("a"))).hasValue(100);
      assertThat(guard.current(entity("b"))).hasValue(1);
      assertThat(guard.current(entity("c"))).isEmpty();
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("many threads offering shuffled versions leave the maximum, and no advance ever"
        + " accepted a version lower than one already accepted")
    void shuffledVersionsEndAtMax() {
      int threads = 8;
      int versions = 400;
      String id = entity("race");
      // The highest version any thread has seen accepted. Read before a call, it is a version
      // accepted strictly before that call began: accepting anything not above it is a lost update.
      AtomicLong acceptedBefore = new AtomicLong(-1);
      List<List<long[]>> histories = Race.run(threads, Duration.ofSeconds(60), t -> {
        List<Long> mine = LongStream.range(0, versions).boxed().collect(Collectors.toList());
        Collections.shuffle(mine, new Random(t));
        List<long[]> history = new ArrayList<>();
        for (long v : mine) {
          long floor = acceptedBefore.get();
          boolean accepted = guard.advance(id, v);
          if (accepted) {
            acceptedBefore.accumulateAndGet(v, Math::max);
          }
          history.add(new long[] {v, floor, accepted ? 1 : 0});
        }
        return history;
      });

      assertThat(guard.current(id)).hasValue(versions - 1);
      long[] acceptedPerVersion = new long[versions];
      for (List<long[]> history : histories) {
        for (long[] call : history) {
          if (call[2] == 1) {
            acceptedPerVersion[(int) call[0]]++;
            assertThat(call[0])
                .as("version accepted although %d was accepted before the call began", call[1])
                .isGreaterThan(call[1]);
          }
        }
      }
      for (int v = 0; v < versions; v++) {
        assertThat(acceptedPerVersion[v]).as("times version %d was accepted", v).isLessThan(2);
      }
      assertThat(acceptedPerVersion[versions - 1]).isEqualTo(1);
    }

    @Test
    @DisplayName("concurrent advances on different entities do not interfere")
    void entitiesInParallel() {
      int threads = 8;
      Race.run(threads, Duration.ofSeconds(60), t -> {
        for (long v = 1; v <= 100; v++) {
          assertThat(guard.advance(entity("e" + t), v)).isTrue();
        }
        return null;
      });

      for (int t = 0; t < threads; t++) {
        assertThat(guard.current(entity("e" + t))).hasValue(100);
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("a null or blank entity id throws IllegalArgumentException naming the entity id")
    void blankEntity() {
      for (String bad : new String[] {null, "", " \t"}) {
        assertThatThrownBy(() -> guard.advance(bad, 1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("entityId");
        assertThatThrownBy(() -> guard.current(bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("entityId");
      }
    }

    @Test
    @DisplayName("a negative version throws IllegalArgumentException naming the version and stores"
        + " nothing")
    void negativeVersion() {
      assertThatThrownBy(() -> guard.advance(entity("a"), -1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("version")
          .hasMessageContaining("-1");

      assertThat(guard.current(entity("a"))).isEmpty();
    }
  }

  @Nested
  @DisplayName("lost replies and the window between advance and the update")
  class LostReplies {

    @Test
    @DisplayName("applyIfNewer: both advances after the effect commit and lose their replies; the"
        + " caller gets the error, current() shows the version recorded, and the redelivery is"
        + " stale: the effect ran once")
    void applyIfNewerBothAdvancesLost() {
      String e = entity("twice");
      java.util.concurrent.atomic.AtomicInteger lose = new java.util.concurrent.atomic.AtomicInteger(2);
      VersionGuard lossy = new VersionGuard() {
        @Override
        public boolean advance(String entityId, long version) {
          boolean r = guard.advance(entityId, version);
          if (lose.getAndDecrement() > 0) {
            throw new LostReply.LostReplyException("advance");
          }
          return r;
        }

        @Override
        public java.util.OptionalLong current(String entityId) {
          return guard.current(entityId);
        }
      };
      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();

      assertThatThrownBy(() -> lossy.applyIfNewer(e, 4, runs::incrementAndGet))
          .isInstanceOf(LostReply.LostReplyException.class);
      assertThat(guard.current(e)).as("recorded though the caller saw an error").hasValue(4);

      assertThat(guard.applyIfNewer(e, 4, runs::incrementAndGet)).as("redelivery").isFalse();
      assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("advance whose reply is lost: done; the repeat answers stale, and current() shows"
        + " the version stored, so the caller can tell")
    void advanceLost() {
      LostReply<VersionGuard> seam = LostReply.over(VersionGuard.class, guard);
      String e = entity("lost");
      seam.dropNextReplyOf("advance");

      assertThatThrownBy(() -> seam.store().advance(e, 5))
          .isInstanceOf(LostReply.LostReplyException.class);

      assertThat(seam.dropped()).isEqualTo(1);
      assertThat(seam.store().advance(e, 5)).isFalse();
      assertThat(guard.current(e)).hasValue(5);
    }

    @Test
    @DisplayName("applyIfNewer: an update that fails leaves the version as it was, so the"
        + " redelivery applies it")
    void applyIfNewerFailedEffect() {
      String e = entity("effect");
      guard.advance(e, 1);
      java.util.List<Long> applied = new java.util.ArrayList<>();

      assertThatThrownBy(() -> guard.applyIfNewer(e, 2, () -> {
        throw new IllegalStateException("update failed");
      })).hasMessage("update failed");
      assertThat(guard.current(e)).hasValue(1);

      assertThat(guard.applyIfNewer(e, 2, () -> applied.add(2L))).isTrue();
      assertThat(guard.applyIfNewer(e, 2, () -> applied.add(2L))).isFalse();
      assertThat(guard.applyIfNewer(e, 1, () -> applied.add(1L))).isFalse();
      assertThat(applied).containsExactly(2L);
      assertThat(guard.current(e)).hasValue(2);
    }

    @Test
    @DisplayName("applyIfNewer: the advance after the effect losing its reply is repeated; the"
        + " effect runs once and the version is stored (unknown and safe to retry)")
    void applyIfNewerLostAdvance() {
      LostReply<VersionGuard> seam = LostReply.over(VersionGuard.class, guard);
      String e = entity("after");
      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
      seam.dropNextReplyOf("advance");

      assertThat(seam.store().applyIfNewer(e, 3, runs::incrementAndGet)).isTrue();

      assertThat(seam.dropped()).isEqualTo(1);
      assertThat(runs).hasValue(1);
      assertThat(guard.current(e)).hasValue(3);
    }
  }
}

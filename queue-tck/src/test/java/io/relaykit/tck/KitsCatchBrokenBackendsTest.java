package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.message.Message;
import io.relaykit.ordering.InMemoryVersionGuard;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * The kits can fail: each is run against a backend broken in one known way, and the cases that
 * check that sentence of the contract must be the ones that fail.
 */
class KitsCatchBrokenBackendsTest {

  private static Set<String> failedCases(Class<?> kitSubclass) {
    return failedCases(kitSubclass, true);
  }

  private static Set<String> failedCases(Class<?> kitSubclass, boolean restPasses) {
    SummaryGeneratingListener listener = new SummaryGeneratingListener();
    LauncherFactory.create().execute(
        LauncherDiscoveryRequestBuilder.request().selectors(selectClass(kitSubclass)).build(),
        listener);
    TestExecutionSummary summary = listener.getSummary();
    if (restPasses) {
      assertThat(summary.getTestsSucceededCount()).as("the rest of the kit still passes")
          .isPositive();
    }
    Set<String> failed = new TreeSet<>();
    for (TestExecutionSummary.Failure f : summary.getFailures()) {
      failed.add(f.getTestIdentifier().getLegacyReportingName().replace("()", ""));
    }
    return failed;
  }

  @Test
  @DisplayName("VersionGuardContract catches a guard that accepts equal versions")
  void versionGuard() {
    assertThat(failedCases(EqualVersionsAccepted.class))
        .contains("equalRejected", "zeroIsValid", "maxValue", "shuffledVersionsEndAtMax")
        .doesNotContain("olderRejected", "perEntity", "blankEntity");
  }

  @Test
  @DisplayName("IdempotencyStoreContract catches a store whose leases never expire")
  void idempotencyStore() {
    assertThat(failedCases(LeasesNeverExpire.class))
        .contains("expiredLeaseReclaimable", "staleTokenAfterTakeover")
        .doesNotContain("exactlyOneWins", "releasedClaimable", "completedIsDone");
  }

  @Test
  @DisplayName("IdempotencyStoreContract catches a store that fences completion by time, one whose"
      + " keys collide on braces, and hosts that decide on their own clocks")
  void idempotencyRulesOfIssue15() {
    assertThat(failedCases(FencedByTime.class))
        .contains("lapsedClaimCompletes", "lapsedClaimReleases")
        .doesNotContain("completedIsDone", "staleTokenAfterTakeover", "completeTwice",
            "nonClaimedRejected");
    assertThat(failedCases(BracesCollide.class))
        .contains("bracesKeptApart")
        .doesNotContain("completedIsDone", "keysAreIndependent", "exactlyOneWins");
    assertThat(failedCases(HostClockDecides.class))
        .contains("fastHostCannotTakeFreshClaim", "fastHostKeepsDoneKeys",
            "slowHostSeesLapsedLease")
        .doesNotContain("completedIsDone", "expiredLeaseReclaimable", "lapsedClaimCompletes");
  }

  @Test
  @DisplayName("DeadLetterStoreContract catches a store that claims it cannot remove or purge but"
      + " does, and one whose remove hands out twice")
  void deadLetterStore() {
    assertThat(failedCases(RemoveNotDeclaredUnsupported.class)).containsExactly("unsupported");
    assertThat(failedCases(PurgeNotDeclaredUnsupported.class)).containsExactly("unsupported");
    assertThat(failedCases(RemoveHandsOutTwice.class))
        .contains("removeOnce", "concurrentRemovers").doesNotContain("roundTrip", "byReason");
  }

  @Test
  @DisplayName("QueueJournalFaultContract catches a journal that loses critical appends in a crash, and one that never records drops")
  void queueJournalFaults() {
    // The random histories catch broken journals; everyCallSite places one fault at each call
    // site in fixed scenarios (its own check is that every armed fault fires), and its eviction
    // scenarios record drops through recordAtomically, which this broken journal leaves alone.
    assertThat(failedCases(CriticalNotDurable.class, false))
        .contains("randomOperationsWithFaults");
    assertThat(failedCases(DropsNotRecorded.class, false))
        .contains("randomOperationsWithFaults");
  }

  @Test
  @DisplayName("OutboxStoreContract catches a store that ignores per-key order")
  void outboxStore() {
    assertThat(failedCases(KeyOrderIgnored.class))
        .contains("oneKeyAtATime", "failingKeyParksOnlyItself", "concurrentClaimers")
        .doesNotContain("leaseHides", "keylessUnordered", "hidesUntilNotBefore");
  }

  @Test
  @DisplayName("OutboxStoreContract catches a store that decides leases, retries and retention on"
      + " its callers' clocks")
  void outboxStoreOnCallersClock() {
    assertThat(failedCases(DecidesOnCallersClock.class))
        .contains("fastRelayCannotTakeFreshLease", "slowRelayTakesOverExpiredLease",
            "leaseRunsOnStoreClock", "retryDelayOnStoreClock", "retentionOnStoreClock")
        .doesNotContain("oneKeyAtATime", "expiredReclaimable", "hidesUntilNotBefore",
            "purgeSentOlderThanIsBounded");
  }

  // ---- broken backends: run only through the launcher above (surefire skips nested classes) ----

  static final class EqualVersionsAccepted extends VersionGuardContract {
    @Override
    protected VersionGuard createGuard() {
      InMemoryVersionGuard real = new InMemoryVersionGuard();
      return new VersionGuard() {
        @Override
        public synchronized boolean advance(String entityId, long version) {
          OptionalLong current = real.current(entityId);
          if (current.isPresent() && current.getAsLong() == version) {
            return true;
          }
          return real.advance(entityId, version);
        }

        @Override
        public OptionalLong current(String entityId) {
          return real.current(entityId);
        }
      };
    }
  }

  /** Forwards to another store; subclasses override what they break. */
  private static class ForwardingIdempotencyStore implements IdempotencyStore {
    final IdempotencyStore delegate;

    ForwardingIdempotencyStore(IdempotencyStore delegate) {
      this.delegate = delegate;
    }

    @Override
    public Claim claim(String key, Duration lease) {
      return delegate.claim(key, lease);
    }

    @Override
    public boolean complete(Claim claim) {
      return delegate.complete(claim);
    }

    @Override
    public boolean release(Claim claim) {
      return delegate.release(claim);
    }

    @Override
    public boolean renew(Claim claim, Duration lease) {
      return delegate.renew(claim, lease);
    }

    @Override
    public Optional<Claim.Status> status(String key) {
      return delegate.status(key);
    }
  }

  /** Completes and releases only while the lease is live, as the JDBC store did before. */
  static final class FencedByTime extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
      return new ForwardingIdempotencyStore(new InMemoryIdempotencyStore(clock, retention)) {
        @Override
        public boolean complete(Claim claim) {
          return live(claim) && delegate.complete(claim);
        }

        @Override
        public boolean release(Claim claim) {
          return live(claim) && delegate.release(claim);
        }

        /** Non-CLAIMED claims go on to the delegate, which refuses them. */
        private boolean live(Claim claim) {
          return claim == null || !claim.isClaimed()
              || claim.leaseExpiresAt().isAfter(clock.instant());
        }
      };
    }
  }

  /** Maps keys as the old Redis encoding did: "a" and "{a}" share one record. */
  static final class BracesCollide extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
      return new ForwardingIdempotencyStore(new InMemoryIdempotencyStore(clock, retention)) {
        @Override
        public Claim claim(String key, Duration lease) {
          Claim c = delegate.claim(old(key), lease);
          return new Claim(key, c.status(), c.token(), c.leaseExpiresAt());
        }

        @Override
        public boolean complete(Claim c) {
          return delegate.complete(mapped(c));
        }

        @Override
        public boolean release(Claim c) {
          return delegate.release(mapped(c));
        }

        @Override
        public boolean renew(Claim c, Duration lease) {
          return delegate.renew(mapped(c), lease);
        }

        @Override
        public Optional<Claim.Status> status(String key) {
          return delegate.status(old(key));
        }

        private Claim mapped(Claim c) {
          return c == null ? null : new Claim(old(c.key()), c.status(), c.token(),
              c.leaseExpiresAt());
        }

        private String old(String key) {
          if (key == null || key.isBlank()) {
            return key;
          }
          int open = key.indexOf('{');
          int close = open < 0 ? -1 : key.indexOf('}', open + 1);
          return close > open + 1 ? key : "{" + key + "}";
        }
      };
    }
  }

  /**
   * One shared backend whose decisions each host makes on its own clock, as the JDBC store did
   * when it compared stored instants with a time the host passed in.
   */
  static final class HostClockDecides extends IdempotencyStoreContract {
    private final AtomicReference<InstantSource> deciding = new AtomicReference<>();
    private IdempotencyStore backend;

    @Override
    protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
      backend = new InMemoryIdempotencyStore(() -> deciding.get().instant(), retention);
      return onHost(clock);
    }

    @Override
    protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
      return Optional.of(onHost(hostClock));
    }

    private IdempotencyStore onHost(InstantSource hostClock) {
      IdempotencyStore shared = backend;
      return new ForwardingIdempotencyStore(shared) {
        @Override
        public Claim claim(String key, Duration lease) {
          synchronized (shared) {
            deciding.set(hostClock);
            return delegate.claim(key, lease);
          }
        }

        @Override
        public boolean complete(Claim claim) {
          synchronized (shared) {
            deciding.set(hostClock);
            return delegate.complete(claim);
          }
        }

        @Override
        public boolean release(Claim claim) {
          synchronized (shared) {
            deciding.set(hostClock);
            return delegate.release(claim);
          }
        }

        @Override
        public boolean renew(Claim claim, Duration lease) {
          synchronized (shared) {
            deciding.set(hostClock);
            return delegate.renew(claim, lease);
          }
        }

        @Override
        public Optional<Claim.Status> status(String key) {
          synchronized (shared) {
            deciding.set(hostClock);
            return delegate.status(key);
          }
        }
      };
    }
  }

  static final class LeasesNeverExpire extends IdempotencyStoreContract {
    @Override
    protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
      // Leases run on a clock that never moves, so they never lapse.
      Instant frozen = clock.instant();
      return new InMemoryIdempotencyStore(() -> frozen, retention);
    }
  }

  static final class RemoveNotDeclaredUnsupported extends DeadLetterStoreContract {
    @Override
    protected DeadLetterStore createStore() {
      return new InMemoryDeadLetterStore();
    }

    @Override
    protected boolean supportsRemoveById() {
      return false;
    }
  }

  static final class PurgeNotDeclaredUnsupported extends DeadLetterStoreContract {
    @Override
    protected DeadLetterStore createStore() {
      return new InMemoryDeadLetterStore();
    }

    @Override
    protected boolean supportsPurge() {
      return false;
    }
  }

  static final class RemoveHandsOutTwice extends DeadLetterStoreContract {
    @Override
    protected DeadLetterStore createStore() {
      InMemoryDeadLetterStore real = new InMemoryDeadLetterStore();
      return new ForwardingDeadLetterStore(real) {
        @Override
        public Optional<DeadLetter> remove(String id) {
          return real.find(id);
        }
      };
    }
  }

  /** The in-memory store without a clock of its own: it takes each caller's word for the time. */
  static final class DecidesOnCallersClock extends OutboxStoreContract {
    private InMemoryOutboxStore real;

    @Override
    protected OutboxStore createStore() {
      real = new InMemoryOutboxStore();
      return real;
    }

    @Override
    protected void appendCommitted(String destination, Message message) {
      real.append(destination, message);
    }
  }

  static final class KeyOrderIgnored extends OutboxStoreContract {
    private InMemoryOutboxStore real;

    @Override
    protected OutboxStore createStore() {
      real = new InMemoryOutboxStore(clock());
      return new OutboxStore() {
        @Override
        public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
          return real.claim(owner, max, lease, now);
        }

        @Override
        public int markSent(String owner, Collection<Long> sequences, Instant now) {
          return real.markSent(owner, sequences, now);
        }

        @Override
        public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
            Instant notBefore, String error) {
          return real.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
        }

        @Override
        public boolean markDead(String owner, long sequence) {
          return real.markDead(owner, sequence);
        }

        @Override
        public int purgeSent(Instant sentBefore) {
          return real.purgeSent(sentBefore);
        }

        @Override
        public int purgeSentOlderThan(Duration retention, int max, Instant now) {
          return real.purgeSentOlderThan(retention, max, now);
        }

        @Override
        public OutboxStats stats(Instant now) {
          return real.stats(now);
        }
      };
    }

    /** Drops every key, so the store sees unordered rows only. */
    @Override
    protected void appendCommitted(String destination, Message message) {
      Message keyless = message.toBuilder().key(null).build();
      real.append(destination, keyless);
    }
  }

  /**
   * A journal that buffers every change until flush or close, critical appends included: a crash
   * loses them.
   */
  static final class CriticalNotDurable extends QueueJournalFaultContract {
    @Override
    protected Backend backend() {
      io.relaykit.queue.InMemoryJournal storage = new io.relaykit.queue.InMemoryJournal();
      return new Backend() {
        @Override
        public io.relaykit.queue.QueueJournal open() {
          return new Buffering(storage.reopen());
        }

        @Override
        public void crash(io.relaykit.queue.QueueJournal journal) {
          ((Buffering) journal).buffer.clear();
        }
      };
    }
  }

  /** A journal that ignores {@code remove(id, DROPPED)}: evicted events come back. */
  static final class DropsNotRecorded extends QueueJournalFaultContract {
    @Override
    protected Backend backend() {
      io.relaykit.queue.InMemoryJournal storage = new io.relaykit.queue.InMemoryJournal();
      return () -> new Buffering(storage.reopen()) {
        @Override
        public void remove(String eventId, Removal removal) {
          if (removal != Removal.DROPPED) {
            super.remove(eventId, removal);
          }
        }
      }.writeThrough();
    }
  }

  /** Applies changes to an in-memory journal at flush (or at once, if writing through). */
  static class Buffering implements io.relaykit.queue.QueueJournal {
    final List<Runnable> buffer = new java.util.ArrayList<>();
    private final io.relaykit.queue.QueueJournal storage;
    private boolean through;

    Buffering(io.relaykit.queue.QueueJournal storage) {
      this.storage = storage;
    }

    Buffering writeThrough() {
      through = true;
      return this;
    }

    private synchronized void later(Runnable change) {
      if (through) {
        change.run();
      } else {
        buffer.add(change);
      }
    }

    @Override
    public void append(io.relaykit.queue.QueuedEvent event) {
      later(() -> storage.append(event));
    }

    @Override
    public void remove(String eventId, Removal removal) {
      later(() -> storage.remove(eventId, removal));
    }

    @Override
    public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
      later(() -> storage.reschedule(eventId, attempts, nextAttemptAt));
    }

    @Override
    public void deadLetter(String eventId, int attempts, String reason) {
      later(() -> storage.deadLetter(eventId, attempts, reason));
    }

    @Override
    public void forget(String eventId) {
      later(() -> storage.forget(eventId));
    }

    @Override
    public io.relaykit.queue.JournalState load() {
      return storage.load();
    }

    @Override
    public synchronized void flush() {
      buffer.forEach(Runnable::run);
      buffer.clear();
    }

    @Override
    public void close() {
      flush();
    }
  }
}

package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.deadletter.ReplayMarkLapsedException;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.tck.LostReply.LostReplyException;
import java.util.concurrent.CopyOnWriteArrayList;
import io.relaykit.message.Message;
import io.relaykit.queue.Priority;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link DeadLetterStore} keeps: subclass it and implement {@link #createStore}.
 *
 * <h2>Capabilities</h2>
 * A store that cannot do an operation says so with {@link #supportsRemoveById()}, {@link
 * #supportsFilters()} or {@link #supportsPurge()} returning false; the kit then checks that the
 * operation throws {@link UnsupportedOperationException} with a reason, instead of skipping it.
 * {@link #supportsReplayMarks()} likewise for replay marks.
 *
 * <h2>Lost replies</h2>
 * {@link LostReplies} drops the reply of every write in turn ({@link LostReply}: the write runs on
 * the real store, the caller sees an exception) and checks by what the store holds that the
 * outcome is the documented one. For a store without removal, purge, retention or marks the cases
 * of those operations do not apply (the operation cannot write) and are reported as skipped by
 * that capability, which the capability cases check.
 *
 * <p>Every test gets a fresh store that must start empty (the kit counts what it holds). Times
 * are whole milliseconds, so stores that keep millisecond or microsecond precision round-trip
 * them exactly.
 */
public abstract class DeadLetterStoreContract {

  /** For a subclass that binds the kit to one backend. */
  protected DeadLetterStoreContract() {}

  /** A fixed instant all times in the kit are relative to. */
  protected static final Instant T0 = Instant.parse("2026-03-01T12:00:00Z");

  private DeadLetterStore store;

  /**
   * A new, empty store; called before every test.
   *
   * @return a store holding no dead letters
   */
  protected abstract DeadLetterStore createStore();

  /**
   * Whether {@link DeadLetterStore#remove} of an arbitrary id is supported.
   *
   * @return true (the default) to run the removal cases; false to check instead that {@code
   *     remove} throws {@link UnsupportedOperationException}
   */
  protected boolean supportsRemoveById() {
    return true;
  }

  /**
   * Whether list, count and purge accept filters (reason, type, source, time range); a store that
   * cannot filter still lists, counts and purges with {@link DeadLetterQuery#all()}.
   *
   * @return true (the default) to run the filter cases; false to check instead that a filtered
   *     query throws {@link UnsupportedOperationException}
   */
  protected boolean supportsFilters() {
    return true;
  }

  /**
   * Whether the store applies retention in bounded steps ({@link
   * DeadLetterStore#purgeFailedBefore}, {@link DeadLetterStore#trimTo}); a store that cannot
   * (a broker queue) throws {@link UnsupportedOperationException} from {@code trimTo}.
   *
   * @return true (the default) to run the retention cases; false to check instead that {@code
   *     trimTo} throws {@link UnsupportedOperationException}
   */
  protected boolean supportsRetention() {
    return true;
  }

  /**
   * Whether {@link DeadLetterStore#purge} is supported (an append-only log cannot delete).
   *
   * @return true (the default) to run the purge cases; false to check instead that {@code purge}
   *     throws {@link UnsupportedOperationException}
   */
  protected boolean supportsPurge() {
    return true;
  }

  /**
   * Whether the store keeps replay marks ({@link DeadLetterStore#marksReplays()}), so a replay
   * keeps the dead letter until its resend is confirmed.
   *
   * @return true (the default) to run the replay-mark cases; false to check instead that {@code
   *     marksReplays()} is false and {@code beginReplay} throws {@link
   *     UnsupportedOperationException} (a replay then takes the dead letter out with {@code remove})
   */
  protected boolean supportsReplayMarks() {
    return true;
  }

  @BeforeEach
  void createFreshStore() {
    store = createStore();
  }

  /**
   * The store under test.
   *
   * @return this test's store, from {@link #createStore()}
   */
  protected DeadLetterStore store() {
    return store;
  }

  /**
   * A dead letter with every field set, whose last failure is {@code minutes} after T0: a 256-byte
   * payload of every byte value, non-ASCII and delimiter characters in a header, a key, a trace id,
   * CRITICAL priority, five attempts, and an exception class and message.
   *
   * @param id the message id
   * @param type the message type
   * @param source where the message was consumed from
   * @param reason why it was dead-lettered
   * @param minutes the last failure's offset from {@link #T0}, in minutes; the first failure is
   *     30 s earlier
   * @return a dead letter of no consumer group
   */
  protected static DeadLetter deadLetter(String id, String type, String source, String reason,
      int minutes) {
    byte[] payload = new byte[256];
    for (int i = 0; i < payload.length; i++) {
      payload[i] = (byte) i;
    }
    Message m = Message.builder()
        .id(id)
        .type(type)
        .schemaVersion(3)
        .key("order-" + id)
        .payload(payload)
        .header("tenant", "acme")
        .header("note", "ünïcödé, = ; \"quoted\"")
        .createdAt(T0.minusSeconds(3600))
        .expiresAt(T0.plusSeconds(86_400))
        .priority(Priority.CRITICAL)
        .traceId("4bf92f3577b34da6a3ce929d0e0e4736")
        .build();
    return new DeadLetter(m, source, reason, "java.io.IOException",
        "connection reset by peer", 5, T0.plusSeconds(60L * minutes - 30),
        T0.plusSeconds(60L * minutes));
  }

  private static DeadLetter deadLetter(String id, int minutes) {
    return deadLetter(id, "order.paid", "orders", "attempts exhausted (5 of 5)", minutes);
  }

  private static String id() {
    return "dl-" + UUID.randomUUID();
  }

  private static List<String> ids(List<DeadLetter> list) {
    List<String> out = new ArrayList<>();
    for (DeadLetter d : list) {
      out.add(d.messageId());
    }
    return out;
  }

  /**
   * {@code d} as dead-lettered by consumer group {@code group}.
   *
   * @param d the dead letter to copy
   * @param group the consumer group, or null for none
   * @return a copy of {@code d} with every other field kept
   */
  protected static DeadLetter inGroup(DeadLetter d, String group) {
    return new DeadLetter(d.message(), d.source(), group, d.reason(), d.exceptionClass(),
        d.exceptionMessage(), d.attempts(), d.firstFailureAt(), d.lastFailureAt());
  }

  @Nested
  @DisplayName("add and find")
  class AddAndFind {

    @Test
    @DisplayName("every field survives the round trip: message, payload bytes, headers, trace id,"
        + " reason, exception, attempts and times")
    void roundTrip() {
      DeadLetter d = deadLetter(id(), 1);

      store.add(d);

      DeadLetter found = store.find(d.id()).orElseThrow();
      assertThat(found).isEqualTo(d);
      assertThat(found.message().payload()).isEqualTo(d.message().payload());
      assertThat(found.message().headers()).containsExactlyEntriesOf(d.message().headers());
      assertThat(found.message().traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
      assertThat(found.message().key()).isEqualTo(d.message().key());
      assertThat(found.message().expiresAt()).isEqualTo(d.message().expiresAt());
      assertThat(found.exceptionClass()).isEqualTo("java.io.IOException");
      assertThat(found.attempts()).isEqualTo(5);
      assertThat(found.firstFailureAt()).isEqualTo(d.firstFailureAt());
      assertThat(found.lastFailureAt()).isEqualTo(d.lastFailureAt());
    }

    @Test
    @DisplayName("a dead letter without exception, key or expiry round-trips with those absent")
    void roundTripMinimal() {
      Message m = Message.builder().id(id()).type("undecodable").payload(new byte[] {0})
          .createdAt(T0).build();
      DeadLetter d = new DeadLetter(m, "orders", "undecodable: missing header relaykit-type",
          null, null, 0, T0, T0);

      store.add(d);

      DeadLetter found = store.find(d.id()).orElseThrow();
      assertThat(found).isEqualTo(d);
      assertThat(found.exceptionClass()).isNull();
      assertThat(found.exceptionMessage()).isNull();
      assertThat(found.message().key()).isEmpty();
      assertThat(found.message().expiresAt()).isEmpty();
    }

    @Test
    @DisplayName("a 256 KiB payload round-trips byte for byte")
    void largePayload() {
      byte[] big = new byte[256 * 1024];
      new java.util.Random(42).nextBytes(big);
      DeadLetter base = deadLetter(id(), 1);
      DeadLetter d = new DeadLetter(base.message().toBuilder().payload(big).build(),
          base.source(), base.reason(), base.exceptionClass(), base.exceptionMessage(),
          base.attempts(), base.firstFailureAt(), base.lastFailureAt());

      store.add(d);

      assertThat(store.find(d.id()).orElseThrow().message().payload()).isEqualTo(big);
    }

    @Test
    @DisplayName("adding the same id again replaces the entry instead of adding a twin")
    void addReplaces() {
      String id = id();
      store.add(deadLetter(id, "order.paid", "orders", "first failure", 1));
      DeadLetter second = deadLetter(id, "order.paid", "orders", "second failure", 9);

      store.add(second);

      assertThat(store.find(second.id())).contains(second);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
      assertThat(store.list(DeadLetterQuery.all())).containsExactly(second);
    }

    @Test
    @DisplayName("an absent id is not found")
    void absent() {
      assertThat(store.find(id())).isEqualTo(Optional.empty());
    }
  }

  @Nested
  @DisplayName("identity: (message id, source, consumer group)")
  class Identity {

    @Test
    @DisplayName("one message dead-lettered at two sources keeps two dead letters; neither"
        + " overwrites the other")
    void twoSources() {
      String id = id();
      DeadLetter toOrders = deadLetter(id, "order.paid", "orders", "orders failed", 1);
      DeadLetter toAudit = deadLetter(id, "order.paid", "audit", "audit failed", 2);

      store.add(toOrders);
      store.add(toAudit);

      assertThat(toOrders.id()).isNotEqualTo(toAudit.id());
      assertThat(store.find(toOrders.id())).contains(toOrders);
      assertThat(store.find(toAudit.id())).contains(toAudit);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(2);
    }

    @Test
    @DisplayName("one message dead-lettered by two consumer groups keeps two dead letters, and"
        + " both stay apart from the source's own (no group) dead letter")
    void twoGroups() {
      DeadLetter base = deadLetter(id(), 1);
      DeadLetter billing = inGroup(base, "billing");
      DeadLetter shipping = inGroup(base, "shipping");

      store.add(billing);
      store.add(shipping);
      store.add(base);

      assertThat(store.find(billing.id())).contains(billing);
      assertThat(store.find(shipping.id())).contains(shipping);
      assertThat(store.find(base.id())).contains(base);
      assertThat(store.find(billing.id()).orElseThrow().group()).isEqualTo("billing");
      assertThat(store.find(base.id()).orElseThrow().group()).isNull();
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(3);
    }

    @Test
    @DisplayName("parts that contain the separators never collide: (a@b, c) and (a, b@c) are two"
        + " dead letters")
    void separatorsEncoded() {
      DeadLetter first = deadLetter("a@b", "order.paid", "c", "first", 1);
      DeadLetter second = deadLetter("a", "order.paid", "b@c", "second", 2);
      DeadLetter third = inGroup(deadLetter("a#g%40", "order.paid", "c", "third", 3), "h");

      store.add(first);
      store.add(second);
      store.add(third);

      assertThat(new java.util.HashSet<>(List.of(first.id(), second.id(), third.id())))
          .hasSize(3);
      assertThat(store.find(first.id())).contains(first);
      assertThat(store.find(second.id())).contains(second);
      assertThat(store.find(third.id())).contains(third);
    }

    @Test
    @DisplayName("remove takes one of them and leaves the other")
    void removeOne() {
      assumeTrue(supportsRemoveById(), "store cannot remove by id: checked in Remove");
      DeadLetter base = deadLetter(id(), 1);
      DeadLetter billing = inGroup(base, "billing");
      store.add(base);
      store.add(billing);

      assertThat(store.remove(billing.id())).contains(billing);

      assertThat(store.find(billing.id())).isEmpty();
      assertThat(store.find(base.id())).contains(base);
    }

    @Test
    @DisplayName("filter by message id: every dead letter of one message, whatever its source or"
        + " group")
    void byMessageId() {
      assumeTrue(supportsFilters(), "store cannot filter: checked in Filters.unsupported()");
      String id = id();
      DeadLetter orders = deadLetter(id, "order.paid", "orders", "r", 1);
      DeadLetter billing = inGroup(deadLetter(id, "order.paid", "orders", "r", 2), "billing");
      store.add(orders);
      store.add(billing);
      store.add(deadLetter(id(), 3));

      assertThat(store.list(DeadLetterQuery.all().withMessageId(id)))
          .containsExactly(orders, billing);
      assertThat(store.count(DeadLetterQuery.all().withMessageId(id))).isEqualTo(2);
    }

    @Test
    @DisplayName("filter by consumer group")
    void byGroup() {
      assumeTrue(supportsFilters(), "store cannot filter: checked in Filters.unsupported()");
      DeadLetter base = deadLetter(id(), 1);
      DeadLetter billing = inGroup(deadLetter(id(), 2), "billing");
      DeadLetter shipping = inGroup(deadLetter(id(), 3), "shipping");
      store.add(base);
      store.add(billing);
      store.add(shipping);

      assertThat(store.list(DeadLetterQuery.all().withGroup("billing"))).containsExactly(billing);
      assertThat(store.count(DeadLetterQuery.all().withGroup("shipping"))).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("list and count")
  class ListAndCount {

    @Test
    @DisplayName("lists by last failure time, then by id")
    void ordering() {
      store.add(deadLetter("c-" + id(), 3));
      store.add(deadLetter("b-2", 1));
      store.add(deadLetter("a-1", 2));
      store.add(deadLetter("a-2", 1));

      List<DeadLetter> all = store.list(DeadLetterQuery.all());

      assertThat(all).isSortedAccordingTo(Comparator.comparing(DeadLetter::lastFailureAt)
          .thenComparing(DeadLetter::id));
      assertThat(ids(all).subList(0, 3)).containsExactly("a-2", "b-2", "a-1");
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(4);
    }

    @Test
    @DisplayName("pages are stable: consecutive pages concatenate to the whole list, no repeats")
    void pagingStable() {
      for (int i = 0; i < 11; i++) {
        store.add(deadLetter(String.format("p-%02d", i), i % 4));
      }
      List<DeadLetter> whole = store.list(DeadLetterQuery.all());

      List<DeadLetter> paged = new ArrayList<>();
      for (int offset = 0; offset < 12; offset += 3) {
        paged.addAll(store.list(DeadLetterQuery.all().withPage(offset, 3)));
      }

      assertThat(whole).hasSize(11);
      assertThat(paged).containsExactlyElementsOf(whole);
      assertThat(store.list(DeadLetterQuery.all().withPage(11, 5))).isEmpty();
      assertThat(store.count(DeadLetterQuery.all().withPage(9, 1))).isEqualTo(11);
    }

    @Test
    @DisplayName("an empty store lists nothing and counts zero")
    void empty() {
      assertThat(store.list(DeadLetterQuery.all())).isEmpty();
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }
  }

  @Nested
  @DisplayName("filters")
  class Filters {

    private DeadLetter paidTimeout;
    private DeadLetter paidDecode;
    private DeadLetter shippedTimeout;
    private DeadLetter shippedOtherSource;

    @BeforeEach
    void fill() {
      paidTimeout = deadLetter("f-1", "order.paid", "orders", "attempts exhausted: Timeout", 1);
      paidDecode = deadLetter("f-2", "order.paid", "orders", "undecodable: bad header", 2);
      shippedTimeout = deadLetter("f-3", "order.shipped", "orders", "max age: Timeout", 3);
      shippedOtherSource =
          deadLetter("f-4", "order.shipped", "outbox", "permanent failure: rejected", 4);
      for (DeadLetter d : List.of(paidTimeout, paidDecode, shippedTimeout, shippedOtherSource)) {
        store.add(d);
      }
    }

    @Test
    @DisplayName("filter by a case-sensitive substring of the reason")
    void byReason() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in unsupported()");
      DeadLetterQuery q = DeadLetterQuery.all().withReasonContains("Timeout");

      assertThat(store.list(q)).containsExactly(paidTimeout, shippedTimeout);
      assertThat(store.count(q)).isEqualTo(2);
      assertThat(store.count(DeadLetterQuery.all().withReasonContains("timeout"))).isZero();
    }

    @Test
    @DisplayName("filter by exact message type")
    void byType() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in unsupported()");
      DeadLetterQuery q = DeadLetterQuery.all().withType("order.shipped");

      assertThat(store.list(q)).containsExactly(shippedTimeout, shippedOtherSource);
      assertThat(store.count(DeadLetterQuery.all().withType("order"))).isZero();
    }

    @Test
    @DisplayName("filter by exact source")
    void bySource() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in unsupported()");
      assertThat(store.list(DeadLetterQuery.all().withSource("outbox")))
          .containsExactly(shippedOtherSource);
    }

    @Test
    @DisplayName("filter by last failure time: from inclusive, before exclusive")
    void byTime() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in unsupported()");
      DeadLetterQuery q = DeadLetterQuery.all()
          .withFailedBetween(paidDecode.lastFailureAt(), shippedOtherSource.lastFailureAt());

      assertThat(store.list(q)).containsExactly(paidDecode, shippedTimeout);
      assertThat(store.count(q)).isEqualTo(2);
      assertThat(store.list(DeadLetterQuery.all().withFailedBetween(null,
          paidDecode.lastFailureAt()))).containsExactly(paidTimeout);
      assertThat(store.list(DeadLetterQuery.all().withFailedBetween(
          shippedTimeout.lastFailureAt().plusMillis(1), null))).containsExactly(shippedOtherSource);
    }

    @Test
    @DisplayName("filters combine with AND, and paging applies after filtering")
    void combined() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in unsupported()");
      DeadLetterQuery q = DeadLetterQuery.all().withType("order.paid").withSource("orders");

      assertThat(store.list(q)).containsExactly(paidTimeout, paidDecode);
      assertThat(store.list(q.withPage(1, 1))).containsExactly(paidDecode);
      assertThat(store.count(q.withReasonContains("Timeout"))).isEqualTo(1);
      assertThat(store.count(q.withPage(1, 1))).isEqualTo(2);
    }

    @Test
    @DisplayName("a store that cannot filter rejects filtered queries with"
        + " UnsupportedOperationException")
    void unsupported() {
      assumeTrue(!supportsFilters(), "store filters: checked by the other cases");
      DeadLetterQuery q = DeadLetterQuery.all().withType("order.paid");

      assertThatThrownBy(() -> store.list(q))
          .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      assertThatThrownBy(() -> store.count(q))
          .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      if (supportsPurge()) {
        assertThatThrownBy(() -> store.purge(q))
            .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      }
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(4);
    }
  }

  /**
   * A dead letter whose last failure is {@code seconds} after {@link #T0}, with the given source,
   * group and exception class (null for none): the raw material of the paging cases.
   */
  private static DeadLetter failedAt(String id, String source, String group,
      String exceptionClass, long seconds) {
    DeadLetter base = deadLetter(id, seconds % 3 == 0 ? "order.paid" : "order.shipped", source,
        "attempts exhausted: " + (exceptionClass == null ? "no exception" : exceptionClass), 0);
    return new DeadLetter(base.message(), source, group, base.reason(), exceptionClass,
        exceptionClass == null ? null : "failed", 5, T0.plusSeconds(seconds - 1),
        T0.plusSeconds(seconds));
  }

  private static final Comparator<DeadLetter> OLDEST_FIRST =
      Comparator.comparing(DeadLetter::lastFailureAt).thenComparing(DeadLetter::id);

  /** What a store must answer for {@code q}, computed over {@code all} in plain Java. */
  private static List<DeadLetter> model(java.util.Collection<DeadLetter> all, DeadLetterQuery q) {
    return all.stream()
        .filter(q::matches)
        .filter(q::isAfterPosition)
        .sorted(q.newestFirst() ? OLDEST_FIRST.reversed() : OLDEST_FIRST)
        .skip(q.offset())
        .limit(q.limit())
        .toList();
  }

  /**
   * 24 dead letters over 12 seconds (two per second, so ties on time are ordered by id), three
   * sources, two groups and none, three exception classes and none.
   */
  private Map<String, DeadLetter> fillForPaging() {
    Map<String, DeadLetter> all = new LinkedHashMap<>();
    String[] sources = {"orders", "payments", "audit"};
    String[] groups = {null, "billing", "shipping"};
    String[] exceptions = {"java.io.IOException", "java.util.concurrent.TimeoutException",
        "java.io.IOException", null};
    for (int i = 0; i < 24; i++) {
      DeadLetter d = failedAt(String.format("k-%02d", (i * 7) % 24), sources[i % 3],
          groups[(i / 3) % 3], exceptions[i % 4], 1 + i / 2);
      store.add(d);
      all.put(d.id(), d);
    }
    return all;
  }

  /** Pages through {@code q} by keyset position; at most 100 pages. */
  private List<DeadLetter> keysetWalk(DeadLetterQuery q) {
    List<DeadLetter> out = new ArrayList<>();
    DeadLetterQuery page = q;
    for (int n = 0; n < 100; n++) {
      List<DeadLetter> got = store.list(page);
      out.addAll(got);
      if (got.size() < page.limit()) {
        return out;
      }
      page = page.withAfter(DeadLetterQuery.Position.of(got.get(got.size() - 1)));
    }
    throw new AssertionError("keyset paging of " + q + " did not end after 100 pages");
  }

  @Nested
  @DisplayName("exception class, newest first and keyset paging")
  class Paging {

    @Test
    @DisplayName("filter by exact exception class: a prefix, another case or a LIKE wildcard"
        + " matches nothing, and dead letters without an exception never match")
    void byExceptionClass() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in Filters");
      Map<String, DeadLetter> all = fillForPaging();
      DeadLetterQuery io = DeadLetterQuery.all().withExceptionClass("java.io.IOException");

      assertThat(store.list(io)).containsExactlyElementsOf(model(all.values(), io));
      assertThat(store.list(io)).hasSize(12);
      assertThat(store.count(io)).isEqualTo(12);
      for (String none : new String[] {"java.io", "java.io.ioexception", "java.io.%", "java_io_IOException", "%", "_"}) {
        assertThat(store.count(DeadLetterQuery.all().withExceptionClass(none))).as(none).isZero();
      }
      DeadLetterQuery timeouts = DeadLetterQuery.all()
          .withExceptionClass("java.util.concurrent.TimeoutException").withSource("orders");
      assertThat(store.list(timeouts)).containsExactlyElementsOf(model(all.values(), timeouts));
      assertThat(store.count(timeouts)).isEqualTo(model(all.values(), timeouts.withPage(0, 100))
          .size());
    }

    @Test
    @DisplayName("newest first lists by last failure time, then id, descending; with filters and"
        + " offset too")
    void newestFirst() {
      Map<String, DeadLetter> all = fillForPaging();
      DeadLetterQuery q = DeadLetterQuery.all().withNewestFirst(true);

      List<DeadLetter> got = store.list(q);

      assertThat(got).containsExactlyElementsOf(model(all.values(), q));
      assertThat(got).isSortedAccordingTo(OLDEST_FIRST.reversed());
      assertThat(store.list(q.withPage(5, 4))).containsExactlyElementsOf(
          model(all.values(), q.withPage(5, 4)));
      if (supportsFilters()) {
        DeadLetterQuery f = q.withSource("payments").withPage(1, 3);
        assertThat(store.list(f)).containsExactlyElementsOf(model(all.values(), f));
      }
    }

    @Test
    @DisplayName("keyset pages of 5 walk the whole set once, oldest first and newest first: no"
        + " repeat, no miss")
    void keysetWholeSet() {
      Map<String, DeadLetter> all = fillForPaging();
      for (boolean newest : new boolean[] {false, true}) {
        DeadLetterQuery q = DeadLetterQuery.all().withNewestFirst(newest).withPage(0, 5);

        List<DeadLetter> walked = keysetWalk(q);

        assertThat(walked).as("newestFirst=%s", newest).containsExactlyElementsOf(
            model(all.values(), q.withPage(0, 100)));
      }
    }

    @Test
    @DisplayName("keyset paging with filters and an offset: each page is the model's, and the"
        + " walk covers every match once")
    void keysetWithFilters() {
      assumeTrue(supportsFilters(), "store declares it cannot filter: checked in Filters");
      Map<String, DeadLetter> all = fillForPaging();
      List<DeadLetterQuery> queries = List.of(
          DeadLetterQuery.all().withSource("orders"),
          DeadLetterQuery.all().withGroup("billing").withNewestFirst(true),
          DeadLetterQuery.all().withExceptionClass("java.io.IOException").withType("order.paid"),
          DeadLetterQuery.all().withSource("payments").withGroup("shipping")
              .withExceptionClass("java.util.concurrent.TimeoutException"),
          DeadLetterQuery.all().withReasonContains("IOException").withNewestFirst(true),
          DeadLetterQuery.all().withFailedBetween(T0.plusSeconds(3), T0.plusSeconds(10))
              .withNewestFirst(true));
      for (DeadLetterQuery base : queries) {
        DeadLetterQuery q = base.withPage(0, 2);
        assertThat(keysetWalk(q)).as("%s", base)
            .containsExactlyElementsOf(model(all.values(), base.withPage(0, 100)));
        List<DeadLetter> first = store.list(q);
        if (!first.isEmpty()) {
          DeadLetterQuery next = q.withAfter(DeadLetterQuery.Position.of(first.get(0)))
              .withPage(1, 3);
          assertThat(store.list(next)).as("after the first, offset 1: %s", base)
              .containsExactlyElementsOf(model(all.values(), next));
        }
      }
    }

    @Test
    @DisplayName("keyset paging stays exact while dead letters are added and removed between"
        + " pages: those behind the position never show, those ahead do, removed ones do not")
    void keysetStableUnderChanges() {
      Map<String, DeadLetter> all = fillForPaging();
      for (boolean newest : new boolean[] {false, true}) {
        DeadLetterQuery q = DeadLetterQuery.all().withNewestFirst(newest).withPage(0, 4);
        List<DeadLetter> walked = new ArrayList<>();
        DeadLetterQuery page = q;
        int round = 0;
        while (true) {
          List<DeadLetter> got = store.list(page);
          assertThat(got).as("page %d, newestFirst=%s", round, newest)
              .containsExactlyElementsOf(model(all.values(), page));
          walked.addAll(got);
          if (got.size() < page.limit()) {
            break;
          }
          DeadLetter last = got.get(got.size() - 1);
          // One behind the position (at its very time, ordered before it), one ahead, one
          // removed ahead, and the position's own dead letter removed.
          String tag = (newest ? "n" : "o") + round;
          long at = last.lastFailureAt().getEpochSecond() - T0.getEpochSecond();
          DeadLetter behind = failedAt(newest ? "zz-" + tag : "aa-" + tag, "orders", null,
              null, at);
          store.add(behind);
          all.put(behind.id(), behind);
          String aheadId = null;
          if (!newest || at >= 2) {
            DeadLetter ahead = failedAt("mid-" + tag, "orders", null, null,
                newest ? at - 1 : at + 2);
            store.add(ahead);
            all.put(ahead.id(), ahead);
            aheadId = ahead.id();
          }
          if (supportsRemoveById()) {
            List<DeadLetter> rest = model(all.values(), page.withAfter(
                DeadLetterQuery.Position.of(last)).withPage(0, 100));
            if (!rest.isEmpty()) {
              DeadLetter gone = rest.get(rest.size() / 2);
              if (!gone.id().equals(aheadId)) {
                assertThat(store.remove(gone.id())).contains(gone);
                all.remove(gone.id());
              }
            }
            assertThat(store.remove(last.id())).contains(last);
            all.remove(last.id());
          }
          page = page.withAfter(DeadLetterQuery.Position.of(last));
          round++;
          assertThat(round).as("pages").isLessThan(100);
        }
        assertThat(walked).as("no dead letter twice").doesNotHaveDuplicates();
        assertThat(walked).isSortedAccordingTo(newest ? OLDEST_FIRST.reversed() : OLDEST_FIRST);
        if (supportsRemoveById()) {
          // Everything still there when its page was read, and nothing behind the positions.
          for (DeadLetter d : all.values()) {
            if (d.messageId().startsWith("mid-")) {
              assertThat(walked).as("added ahead of the position: %s", d.id()).contains(d);
            }
          }
        }
        String behindPrefix = newest ? "zz-n" : "aa-o";
        for (DeadLetter d : walked) {
          assertThat(d.messageId()).as("added behind a position").doesNotStartWith(behindPrefix);
        }
      }
    }

    @Test
    @DisplayName("a position that matches no dead letter pages from where it would sort, and odd"
        + " characters in it or in a filter (quotes, SQL, LIKE wildcards, an unpaired surrogate)"
        + " are compared as data, never run")
    void oddPositionsAndValues() {
      Map<String, DeadLetter> all = fillForPaging();
      for (String odd : new String[] {"k-05'", "k-05\"; DROP TABLE dead_letter; --",
          "' OR '1'='1", "k-0%", "k-0_", "\\", "k-05\uD800", "\uDC00x", "k-05\u0000"}) {
        for (boolean newest : new boolean[] {false, true}) {
          // At a time with dead letters (ties ordered by id), and at a time with none.
          for (Instant at : List.of(T0.plusSeconds(3), T0.plusSeconds(3).plusMillis(500))) {
            DeadLetterQuery q = DeadLetterQuery.all().withNewestFirst(newest).withPage(0, 100)
                .withAfter(new DeadLetterQuery.Position(at, odd));
            List<DeadLetter> got = store.list(q);
            List<DeadLetter> expected = model(all.values(), q);
            if (odd.chars().allMatch(ch -> ch > 0 && ch < 0x80)) {
              assertThat(got).as("after (%s, %s), newestFirst=%s", at, odd, newest)
                  .containsExactlyElementsOf(expected);
            } else {
              // Stores may order non-ASCII ids by code point or by UTF-16 unit; both put every
              // dead letter of another time on the same side of the position.
              assertThat(got).as("after (%s, %s), newestFirst=%s", at, odd, newest)
                  .doesNotHaveDuplicates()
                  .containsAll(expected.stream()
                      .filter(d -> !d.lastFailureAt().equals(at)).toList())
                  .allMatch(d -> all.containsKey(d.id()));
            }
          }
        }
        if (supportsFilters()) {
          assertThat(store.list(DeadLetterQuery.all().withExceptionClass(odd))).as(odd).isEmpty();
          assertThat(store.count(DeadLetterQuery.all().withSource(odd).withGroup(odd)))
              .as(odd).isZero();
        }
      }
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(24);
    }
  }

  @Nested
  @DisplayName("counts per source and group")
  class CountBySource {

    @Test
    @DisplayName("one row per (source, group), by source then group (no group first), with the"
        + " count and the span of last failures")
    void rows() {
      Map<String, DeadLetter> all = fillForPaging();
      java.util.TreeMap<String, List<DeadLetter>> bySource = new java.util.TreeMap<>();
      for (DeadLetter d : all.values()) {
        bySource.computeIfAbsent(d.source() + "\u0000"
            + (d.group() == null ? "" : "\u0001" + d.group()), k -> new ArrayList<>()).add(d);
      }
      List<io.relaykit.deadletter.DeadLetterCount> expected = new ArrayList<>();
      for (List<DeadLetter> ds : bySource.values()) {
        DeadLetter first = ds.get(0);
        expected.add(new io.relaykit.deadletter.DeadLetterCount(first.source(), first.group(),
            ds.size(),
            ds.stream().map(DeadLetter::lastFailureAt).min(Comparator.naturalOrder()).orElseThrow(),
            ds.stream().map(DeadLetter::lastFailureAt).max(Comparator.naturalOrder())
                .orElseThrow()));
      }

      assertThat(store.countBySource(100)).containsExactlyElementsOf(expected);
      assertThat(store.countBySource(4)).containsExactlyElementsOf(expected.subList(0, 4));
      assertThat(store.countBySource(1)).containsExactly(expected.get(0));
      assertThat(expected.get(0).group()).as("audit, no group first").isNull();
    }

    @Test
    @DisplayName("an empty store has no rows; a replaced dead letter counts once; maxRows out of"
        + " range is refused naming it")
    void edges() {
      assertThat(store.countBySource(10)).isEmpty();
      DeadLetter d = failedAt("c-1", "orders", "billing", null, 5);
      store.add(d);
      store.add(failedAt("c-1", "orders", "billing", null, 9));

      assertThat(store.countBySource(10)).containsExactly(new io.relaykit.deadletter.DeadLetterCount(
          "orders", "billing", 1, T0.plusSeconds(9), T0.plusSeconds(9)));
      for (int bad : new int[] {0, -1, DeadLetterQuery.MAX_LIMIT + 1}) {
        assertThatThrownBy(() -> store.countBySource(bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxRows");
      }
    }
  }

  @Nested
  @DisplayName("replay marks: the dead letter stays until its resend is confirmed")
  class ReplayMarks {

    @Test
    @DisplayName("a marked dead letter is still found, listed and counted; finishing with its"
        + " token removes it, once")
    void markThenFinish() {
      assumeTrue(supportsReplayMarks(), "store keeps no marks: checked in unsupported()");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      assertThat(store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1))).contains(d);
      assertThat(store.find(d.id())).contains(d);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);

      assertThat(store.finishReplay(d.id(), "t-2")).isFalse();
      assertThat(store.finishReplay(d.id(), "t-1")).isTrue();
      assertThat(store.finishReplay(d.id(), "t-1")).isFalse();
      assertThat(store.find(d.id())).isEmpty();
    }

    @Test
    @DisplayName("another token's live mark refuses a second replay; the same token renews it;"
        + " abandoning frees it")
    void exclusive() {
      assumeTrue(supportsReplayMarks(), "store keeps no marks: checked in unsupported()");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1));

      assertThatThrownBy(() -> store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1)))
          .isInstanceOf(ReplayInProgressException.class).hasMessageContaining(d.id());
      assertThat(store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1))).contains(d);
      assertThat(store.abandonReplay(d.id(), "t-2")).isFalse();
      assertThat(store.abandonReplay(d.id(), "t-1")).isTrue();
      assertThat(store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1))).contains(d);
      assertThat(store.find(d.id())).contains(d);
    }

    @Test
    @DisplayName("a dead letter stored again while marked drops the mark: the old replay cannot"
        + " remove the newer one")
    void addDropsMark() {
      assumeTrue(supportsReplayMarks(), "store keeps no marks: checked in unsupported()");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1));
      DeadLetter again = new DeadLetter(d.message(), d.source(), d.group(), "failed again",
          d.exceptionClass(), d.exceptionMessage(), 2, d.firstFailureAt(),
          d.lastFailureAt().plusSeconds(60));
      store.add(again);

      assertThat(store.finishReplay(d.id(), "t-1")).isFalse();
      assertThat(store.find(d.id())).contains(again);
      assertThat(store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1))).contains(again);
    }

    @Test
    @DisplayName("a mark whose lease lapsed while its replayer still resends is taken over; the"
        + " first replayer's finish and abandon are fenced off by its token and change nothing;"
        + " the new holder's finish removes it once")
    void lapsedMarkIsFencedByToken() {
      assumeTrue(supportsReplayMarks(), "store keeps no marks: checked in unsupported()");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      assertThat(store.beginReplay(d.id(), "slow", Duration.ofMillis(300))).contains(d);

      // The store's own clock lets the lease lapse: a second replayer takes the mark over.
      Await.until(Duration.ofSeconds(10), "the slow replay's lease lapses on the store's clock",
          () -> {
            try {
              return store.beginReplay(d.id(), "fast", Duration.ofMinutes(1)).isPresent();
            } catch (ReplayInProgressException e) {
              return false;
            }
          });

      assertThat(store.finishReplay(d.id(), "slow")).as("the slow replayer's finish").isFalse();
      assertThat(store.abandonReplay(d.id(), "slow")).as("the slow replayer's abandon").isFalse();
      assertThat(store.find(d.id())).contains(d);
      assertThatThrownBy(() -> store.beginReplay(d.id(), "slow", Duration.ofMinutes(1)))
          .as("the slow replayer's retried mark").isInstanceOf(ReplayInProgressException.class);
      assertThatThrownBy(() -> store.beginReplay(d.id(), "third", Duration.ofMinutes(1)))
          .isInstanceOf(ReplayInProgressException.class);
      assertThat(store.finishReplay(d.id(), "fast")).isTrue();
      assertThat(store.find(d.id())).isEmpty();
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("marking an absent id answers empty and stores nothing")
    void absent() {
      assumeTrue(supportsReplayMarks(), "store keeps no marks: checked in unsupported()");
      assertThat(store.beginReplay(id(), "t-1", Duration.ofMinutes(1))).isEmpty();
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("a store without replay marks says so and refuses beginReplay with"
        + " UnsupportedOperationException, keeping the entry")
    void unsupported() {
      assumeTrue(!supportsReplayMarks(), "store keeps marks: checked by the other cases");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      assertThat(store.marksReplays()).isFalse();
      assertThatThrownBy(() -> store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1)))
          .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("lost replies: every write committed, its reply dropped")
  class LostReplies {

    private LostReply<DeadLetterStore> seam() {
      return LostReply.over(DeadLetterStore.class, store);
    }

    private void dropAndCall(LostReply<DeadLetterStore> seam, String method,
        Runnable call) {
      seam.dropNextReplyOf(method);
      assertThatThrownBy(call::run).isInstanceOf(LostReplyException.class);
      assertThat(seam.dropped()).isEqualTo(1);
    }

    @Test
    @DisplayName("add: unknown and safe to retry; the repeat leaves one entry")
    void add() {
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);

      dropAndCall(seam, "add", () -> seam.store().add(d));
      seam.store().add(d);

      assertThat(store.find(d.id())).contains(d);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
    }

    @Test
    @DisplayName("remove: done, and the dead letter was only in the lost reply (the repeat answers"
        + " empty): why replay marks instead of removing")
    void remove() {
      assumeTrue(supportsRemoveById(), "remove does not apply: the store cannot remove by id");
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      dropAndCall(seam, "remove", () -> seam.store().remove(d.id()));

      assertThat(seam.store().remove(d.id())).isEmpty();
      assertThat(store.find(d.id())).isEmpty();
    }

    @Test
    @DisplayName("beginReplay: unknown and safe to retry with the same token; others stay off")
    void beginReplay() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      dropAndCall(seam, "beginReplay",
          () -> seam.store().beginReplay(d.id(), "t-1", Duration.ofMinutes(1)));

      assertThatThrownBy(() -> store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1)))
          .isInstanceOf(ReplayInProgressException.class);
      assertThat(seam.store().beginReplay(d.id(), "t-1", Duration.ofMinutes(1))).contains(d);
    }

    @Test
    @DisplayName("finishReplay: done; the repeat answers false and the entry is gone")
    void finishReplay() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1));

      dropAndCall(seam, "finishReplay", () -> seam.store().finishReplay(d.id(), "t-1"));

      assertThat(seam.store().finishReplay(d.id(), "t-1")).isFalse();
      assertThat(store.find(d.id())).isEmpty();
    }

    @Test
    @DisplayName("abandonReplay: done; the repeat answers false and another replay may start")
    void abandonReplay() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      store.beginReplay(d.id(), "t-1", Duration.ofMinutes(1));

      dropAndCall(seam, "abandonReplay", () -> seam.store().abandonReplay(d.id(), "t-1"));

      assertThat(seam.store().abandonReplay(d.id(), "t-1")).isFalse();
      assertThat(store.beginReplay(d.id(), "t-2", Duration.ofMinutes(1))).contains(d);
    }

    @Test
    @DisplayName("purge, purgeFailedBefore, trimTo: unknown and safe to retry; the repeat removes"
        + " nothing more")
    void retention() {
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter old = deadLetter(id(), 1);
      DeadLetter mid = deadLetter(id(), 2);
      DeadLetter young = deadLetter(id(), 3);
      DeadLetter newest = deadLetter(id(), 4);
      for (DeadLetter d : List.of(old, mid, young, newest)) {
        store.add(d);
      }
      if (supportsRetention()) {
        dropAndCall(seam, "purgeFailedBefore",
            () -> seam.store().purgeFailedBefore(T0.plusSeconds(90), 10));
        assertThat(seam.store().purgeFailedBefore(T0.plusSeconds(90), 10)).isZero();
        assertThat(store.find(old.id())).isEmpty();
        LostReply<DeadLetterStore> again = seam();
        dropAndCall(again, "trimTo", () -> again.store().trimTo(2, 10));
        assertThat(again.store().trimTo(2, 10)).isZero();
        assertThat(ids(store.list(DeadLetterQuery.all())))
            .containsExactly(young.messageId(), newest.messageId());
      }
      if (supportsPurge()) {
        LostReply<DeadLetterStore> third = seam();
        dropAndCall(third, "purge", () -> third.store().purge(DeadLetterQuery.all()));
        assertThat(third.store().purge(DeadLetterQuery.all())).isZero();
        assertThat(store.count(DeadLetterQuery.all())).isZero();
      }
    }

    @Test
    @DisplayName("a replay whose every store call loses its first reply resends once and removes"
        + " the dead letter (a store with marks)")
    void replayThroughLostReplies() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      for (String method : List.of("beginReplay", "finishReplay")) {
        LostReply<DeadLetterStore> seam = seam();
        DeadLetter d = deadLetter(id(), 1);
        store.add(d);
        List<DeadLetter> resent = new CopyOnWriteArrayList<>();
        DeadLetterReplayer replayer = new DeadLetterReplayer(seam.store(), x -> {
          assertThat(store.find(x.id())).as("kept while resending").contains(d);
          resent.add(x);
        }, LifecycleListener.noop(), () -> T0);

        seam.dropNextReplyOf(method);
        assertThat(replayer.replay(d.id())).as(method).contains(d);

        assertThat(seam.dropped()).isEqualTo(1);
        assertThat(resent).as(method).containsExactly(d);
        assertThat(store.find(d.id())).as(method).isEmpty();
      }
    }

    @Test
    @DisplayName("a replayer whose mark lapsed and was taken over by a replay that resent and"
        + " removed it does not report success: it says the mark lapsed and another replay may"
        + " also have sent it")
    void lapsedReplayerAfterTakeoverFinished() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      List<String> resent = new CopyOnWriteArrayList<>();
      DeadLetterReplayer fast = new DeadLetterReplayer(store, x -> resent.add("fast"),
          LifecycleListener.noop(), () -> T0);
      DeadLetterReplayer slow = new DeadLetterReplayer(store, x -> {
        resent.add("slow");
        // While this resend is slow, its lease lapses on the store's clock and another replay
        // takes the mark over, resends and removes the dead letter.
        Await.until(Duration.ofSeconds(10), "another replay takes the lapsed mark over", () -> {
          try {
            return fast.replay(d.id()).isPresent();
          } catch (ReplayInProgressException e) {
            return false;
          }
        });
      }, LifecycleListener.noop(), () -> T0, Duration.ofMillis(300));

      assertThatThrownBy(() -> slow.replay(d.id()))
          .isInstanceOf(ReplayMarkLapsedException.class)
          .hasMessageContaining(d.id()).hasMessageContaining("another replay may also have sent")
          .satisfies(e -> assertThat(((ReplayMarkLapsedException) e).deadLetter()).isEqualTo(d));
      assertThat(resent).containsExactly("slow", "fast");
      assertThat(store.find(d.id())).isEmpty();
    }

    @Test
    @DisplayName("a replayer whose mark lapsed and is now held by another replay does not report"
        + " success and leaves the other replay's mark and the dead letter alone")
    void lapsedReplayerWhileAnotherHoldsIt() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      DeadLetterReplayer slow = new DeadLetterReplayer(store, x ->
          Await.until(Duration.ofSeconds(10), "another replay takes the lapsed mark over", () -> {
            try {
              return store.beginReplay(d.id(), "other", Duration.ofMinutes(1)).isPresent();
            } catch (ReplayInProgressException e) {
              return false;
            }
          }), LifecycleListener.noop(), () -> T0, Duration.ofMillis(300));

      assertThatThrownBy(() -> slow.replay(d.id()))
          .isInstanceOf(ReplayMarkLapsedException.class).hasMessageContaining(d.id());
      assertThat(store.find(d.id())).contains(d);
      assertThatThrownBy(() -> store.beginReplay(d.id(), "third", Duration.ofMinutes(1)))
          .as("the other replay's mark is intact").isInstanceOf(ReplayInProgressException.class);
      assertThat(store.finishReplay(d.id(), "other")).isTrue();
    }

    @Test
    @DisplayName("a dead letter stored again while its replay resends stays, and the replay of the"
        + " older one reports success")
    void newerDeadLetterDuringReplayStays() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      DeadLetter again = new DeadLetter(d.message(), d.source(), d.group(), "failed again",
          d.exceptionClass(), d.exceptionMessage(), 2, d.firstFailureAt(),
          d.lastFailureAt().plusSeconds(60));
      DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> store.add(again),
          LifecycleListener.noop(), () -> T0);

      assertThat(replayer.replay(d.id())).contains(d);
      assertThat(store.find(d.id())).contains(again);
      assertThat(store.beginReplay(d.id(), "next", Duration.ofMinutes(1))).as("left unmarked")
          .contains(again);
    }

    @Test
    @DisplayName("a failed resend whose unmarking loses its reply keeps the dead letter, unmarked:"
        + " the next replay may start at once")
    void failedResendLostUnmark() {
      assumeTrue(supportsReplayMarks(), "marks do not apply: the store keeps none");
      LostReply<DeadLetterStore> seam = seam();
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      DeadLetterReplayer failing = new DeadLetterReplayer(seam.store(), x -> {
        throw new java.io.IOException("broker down");
      }, LifecycleListener.noop(), () -> T0);

      seam.dropNextReplyOf("abandonReplay");
      assertThatThrownBy(() -> failing.replay(d.id()))
          .isInstanceOf(DeadLetterReplayer.ReplayException.class);

      assertThat(seam.dropped()).isEqualTo(1);
      assertThat(store.find(d.id())).contains(d);
      assertThat(store.beginReplay(d.id(), "next", Duration.ofMinutes(1))).contains(d);
    }
  }

  @Nested
  @DisplayName("remove")
  class Remove {

    @Test
    @DisplayName("remove hands a dead letter out once: then it is gone")
    void removeOnce() {
      assumeTrue(supportsRemoveById(), "store cannot remove by id: checked in unsupported()");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      assertThat(store.remove(d.id())).contains(d);

      assertThat(store.remove(d.id())).isEmpty();
      assertThat(store.find(d.id())).isEmpty();
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("removing an absent id returns empty and removes nothing else")
    void removeAbsent() {
      assumeTrue(supportsRemoveById(), "store cannot remove by id: checked in unsupported()");
      store.add(deadLetter(id(), 1));

      assertThat(store.remove(id())).isEmpty();
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
    }

    @Test
    @DisplayName("of 8 concurrent removers of one id, exactly one gets the dead letter")
    void concurrentRemovers() {
      assumeTrue(supportsRemoveById(), "store cannot remove by id: checked in unsupported()");
      for (int round = 0; round < 10; round++) {
        DeadLetter d = deadLetter(id(), round);
        store.add(d);

        List<Optional<DeadLetter>> got =
            Race.run(8, Duration.ofSeconds(30), i -> store.remove(d.id()));

        assertThat(got).filteredOn(Optional::isPresent).hasSize(1);
        assertThat(got).filteredOn(Optional::isPresent).first().isEqualTo(Optional.of(d));
      }
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("a store that cannot remove by id throws UnsupportedOperationException and keeps"
        + " the entry")
    void unsupported() {
      assumeTrue(!supportsRemoveById(), "store removes by id: checked by the other cases");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);

      assertThatThrownBy(() -> store.remove(d.id()))
          .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("purge")
  class Purge {

    @Test
    @DisplayName("purge removes exactly what the filter selects, ignoring paging, and says how many")
    void purgeFiltered() {
      assumeTrue(supportsPurge(), "store cannot purge: checked in unsupported()");
      assumeTrue(supportsFilters(), "store cannot filter: checked in Filters.unsupported()");
      Map<String, DeadLetter> kept = new LinkedHashMap<>();
      for (int i = 0; i < 6; i++) {
        DeadLetter d = deadLetter("pg-" + i, i % 2 == 0 ? "order.paid" : "order.shipped",
            "orders", "r", i);
        store.add(d);
        if (i % 2 == 1) {
          kept.put(d.id(), d);
        }
      }

      long purged = store.purge(DeadLetterQuery.all().withType("order.paid").withPage(0, 1));

      assertThat(purged).isEqualTo(3);
      assertThat(store.list(DeadLetterQuery.all())).containsExactlyElementsOf(kept.values());
      assertThat(store.find(DeadLetter.idOf("pg-0", "orders", null))).isEmpty();
    }

    @Test
    @DisplayName("purge with no filter empties the store")
    void purgeAll() {
      assumeTrue(supportsPurge(), "store cannot purge: checked in unsupported()");
      for (int i = 0; i < 5; i++) {
        store.add(deadLetter(id(), i));
      }

      assertThat(store.purge(DeadLetterQuery.all())).isEqualTo(5);

      assertThat(store.count(DeadLetterQuery.all())).isZero();
      assertThat(store.list(DeadLetterQuery.all())).isEmpty();
      assertThat(store.purge(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("a store that cannot purge throws UnsupportedOperationException and keeps"
        + " everything")
    void unsupported() {
      assumeTrue(!supportsPurge(), "store purges: checked by the other cases");
      store.add(deadLetter(id(), 1));
      store.add(deadLetter(id(), 2));

      assertThatThrownBy(() -> store.purge(DeadLetterQuery.all()))
          .isInstanceOf(UnsupportedOperationException.class).hasMessageMatching(".+");
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(2);
    }
  }

  @Nested
  @DisplayName("retention: by age and by count, in bounded steps")
  class Retention {

    @Test
    @DisplayName("purgeFailedBefore removes at most max of those that failed before the time,"
        + " oldest first, and keeps the rest")
    void byAge() {
      assumeTrue(supportsRetention(), "no retention: checked in unsupported()");
      for (int i = 1; i <= 5; i++) {
        store.add(deadLetter("age-" + i, i));
      }
      java.time.Instant cutoff = T0.plusSeconds(60 * 3 + 30);
      assertThat(store.purgeFailedBefore(cutoff, 2)).isEqualTo(2);
      assertThat(store.find(DeadLetter.idOf("age-1", "orders", null))).isEmpty();
      assertThat(store.find(DeadLetter.idOf("age-3", "orders", null))).isPresent();
      assertThat(store.purgeFailedBefore(cutoff, 2)).isEqualTo(1);
      assertThat(store.purgeFailedBefore(cutoff, 2)).isZero();
      assertThat(ids(store.list(DeadLetterQuery.all()))).containsExactly("age-4", "age-5");
    }

    @Test
    @DisplayName("trimTo keeps the newest dead letters, removing at most max of the oldest per"
        + " call")
    void byCount() {
      assumeTrue(supportsRetention(), "no retention: checked in unsupported()");
      for (int i = 1; i <= 5; i++) {
        store.add(deadLetter("count-" + i, i));
      }
      assertThat(store.trimTo(2, 2)).isEqualTo(2);
      assertThat(store.trimTo(2, 2)).isEqualTo(1);
      assertThat(store.trimTo(2, 2)).isZero();
      assertThat(ids(store.list(DeadLetterQuery.all()))).containsExactly("count-4", "count-5");
      assertThat(store.trimTo(0, 10)).isEqualTo(2);
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("retention rejects a null time, max below 1 and a negative keep, naming them")
    void badArguments() {
      assumeTrue(supportsRetention(), "no retention: checked in unsupported()");
      assertThatThrownBy(() -> store.purgeFailedBefore(null, 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("failedBefore");
      assertThatThrownBy(() -> store.purgeFailedBefore(T0, 0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max");
      assertThatThrownBy(() -> store.trimTo(-1, 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keep");
      assertThatThrownBy(() -> store.trimTo(1, 0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max");
    }

    @Test
    @DisplayName("a store without retention says so: trimTo throws UnsupportedOperationException"
        + " and keeps everything")
    void unsupported() {
      assumeTrue(!supportsRetention(), "store has retention: checked by the other cases");
      store.add(deadLetter(id(), 1));
      assertThatThrownBy(() -> store.trimTo(0, 10))
          .isInstanceOf(UnsupportedOperationException.class);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
    }

    @Test
    @DisplayName("a store without ordered retention and without a clock of its own: age retention"
        + " either is refused (no purge: the broker's retention applies) or is decided by the"
        + " caller's now against the stamped last-failure time")
    void ageRetentionWithoutStoreClock() {
      assumeTrue(!supportsRetention(), "store has retention: checked by the other cases");
      DeadLetter d = deadLetter(id(), 1);
      store.add(d);
      Duration age = Duration.ofDays(7);
      if (!supportsPurge()) {
        assertThatThrownBy(() -> store.purgeFailedOlderThan(age, 10,
            d.lastFailureAt().plus(age).plusSeconds(1)))
            .isInstanceOf(UnsupportedOperationException.class);
        assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
        return;
      }
      assertThat(store.purgeFailedOlderThan(age, 10, d.lastFailureAt().plus(age).minusSeconds(1)))
          .as("the caller's clock says it is not old yet").isZero();
      assertThat(store.find(d.id())).contains(d);
      assertThat(store.purgeFailedOlderThan(age, 10, d.lastFailureAt().plus(age).plusSeconds(1)))
          .as("the caller's clock says it is old").isEqualTo(1);
      assertThat(store.find(d.id())).isEmpty();
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("null or blank ids throw IllegalArgumentException naming the id")
    void blankIds() {
      for (String bad : new String[] {null, "", "  "}) {
        assertThatThrownBy(() -> store.find(bad))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("id");
        if (supportsRemoveById()) {
          assertThatThrownBy(() -> store.remove(bad))
              .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("id");
        }
      }
    }

    @Test
    @DisplayName("a null dead letter or query throws IllegalArgumentException")
    void nulls() {
      assertThatThrownBy(() -> store.add(null)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.list(null)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.count(null)).isInstanceOf(IllegalArgumentException.class);
      if (supportsPurge()) {
        assertThatThrownBy(() -> store.purge(null))
            .isInstanceOf(IllegalArgumentException.class);
      }
      assertThat(store.count(DeadLetterQuery.all())).isZero();
    }
  }
}

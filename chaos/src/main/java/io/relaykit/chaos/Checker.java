package io.relaykit.chaos;

import io.relaykit.chaos.History.DbDeadLetter;
import io.relaykit.chaos.History.DbEffect;
import io.relaykit.chaos.History.DbOrder;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.Sample;
import io.relaykit.chaos.History.StatusSeen;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks a run's {@link History} against what the demo promises, and computes its figures.
 *
 * <ul>
 *   <li><b>lost</b>: an order the client got a 202 for that is neither SUCCESS (both effects
 *       present) nor FAILED with a dead letter, or that the database does not hold at all.
 *   <li><b>duplicate effects</b>: an (order, effect) with more than one effect row.
 *   <li><b>order violations</b>: a status the client read that goes back (a later read, started
 *       after an earlier one ended, shows an earlier stage, or another terminal status); a poison
 *       order with an effect.
 *   <li><b>key violations</b>: one Idempotency-Key answered with two order ids; two orders in the
 *       database under one key; a 202 naming an order stored under another key; a 422 to an
 *       identical resend (the client never changes a key's body).
 *   <li><b>dead-letter mismatches</b>: a dead letter whose order is missing or was last seen
 *       SUCCESS; an order last seen FAILED without a dead letter.
 *   <li><b>effects without dedupe row</b>: an effect row whose idempotency key is not DONE, so a
 *       redelivery would do it again.
 * </ul>
 * The verdict passes only when all of these are zero. Costs one pass over each list.
 */
public final class Checker {
  static final List<String> EFFECTS = List.of("sms", "coupon");
  /** How many examples each finding lists. */
  static final int EXAMPLES = 20;
  /** The backlog before a fault is its maximum over this many ms before the fault started. */
  static final long BASELINE_MS = 5_000;

  private Checker() {}

  /** How long a fault may take to recover unless the run says otherwise: 60 s from its start. */
  static final long DEFAULT_RECOVERY_BOUND_MS = 60_000;

  /**
   * A fault's recovery: ms from its start until the backlog was back at its level before and
   * deliveries were flowing (see {@link #recovery}). A fault that did not recover within the
   * run's bound has {@code recoveredAtMs} null, {@code recoveryMs} equal to the bound and {@code
   * unrecovered} true; it fails the verdict.
   */
  public record Recovery(String fault, String target, long startMs, long endMs,
      long baselineBacklog, Long recoveredAtMs, Long recoveryMs, boolean unrecovered) {}

  /** The checker's figures; {@link #passed()} is the verdict. */
  public record Verdict(
      long requests,
      long acceptedKeys,
      long unacceptedKeys,
      long ordersInDatabase,
      long unacknowledgedOrders,
      long terminal,
      long success,
      long failed,
      long failedNotPoison,
      long lost,
      long duplicateEffects,
      long orderViolations,
      long keyViolations,
      long deadLettersWithoutFailedOrder,
      long failedOrdersWithoutDeadLetter,
      long effectsWithoutDedupeRow,
      long outboxUnsent,
      long maxOldestPendingMs,
      long maxBacklog,
      List<Recovery> recoveries,
      Map<String, List<String>> examples) {

    /** How many faults did not recover within the run's bound. */
    public long unrecoveredFaults() {
      return recoveries.stream().filter(Recovery::unrecovered).count();
    }

    /**
     * True when nothing was lost, nothing done twice, no promise broken and every fault recovered
     * within the run's bound.
     */
    public boolean passed() {
      return lost == 0 && duplicateEffects == 0 && orderViolations == 0 && keyViolations == 0
          && deadLettersWithoutFailedOrder == 0 && failedOrdersWithoutDeadLetter == 0
          && effectsWithoutDedupeRow == 0 && unrecoveredFaults() == 0;
    }
  }

  /** Checks {@code h} with the default recovery bound (60 s). */
  public static Verdict check(History h) {
    return check(h, DEFAULT_RECOVERY_BOUND_MS);
  }

  /** Checks {@code h}; a fault not recovered {@code recoveryBoundMs} after its start fails it. */
  public static Verdict check(History h, long recoveryBoundMs) {
    Map<String, List<String>> examples = new LinkedHashMap<>();

    // What the client was told, per key.
    Map<String, Set<String>> idsByKey = new LinkedHashMap<>();
    Set<String> sentKeys = new LinkedHashSet<>();
    long keyViolations = 0;
    for (Request r : h.requests()) {
      sentKeys.add(r.key());
      if (r.status() == 202 && r.orderId() != null) {
        idsByKey.computeIfAbsent(r.key(), k -> new LinkedHashSet<>()).add(r.orderId());
      }
      if (r.status() == 422) {
        keyViolations++;
        note(examples, "keyViolations", "key " + r.key() + ": 422 to an identical resend");
      }
    }
    for (Map.Entry<String, Set<String>> e : idsByKey.entrySet()) {
      if (e.getValue().size() > 1) {
        keyViolations++;
        note(examples, "keyViolations", "key " + e.getKey() + " answered with orders "
            + e.getValue());
      }
    }

    // What the database holds.
    Map<String, DbOrder> orders = new HashMap<>();
    Map<String, Integer> ordersPerKey = new HashMap<>();
    for (DbOrder o : h.orders()) {
      orders.put(o.id(), o);
      ordersPerKey.merge(o.idempotencyKey(), 1, Integer::sum);
    }
    for (Map.Entry<String, Integer> e : ordersPerKey.entrySet()) {
      if (e.getValue() > 1) {
        keyViolations++;
        note(examples, "keyViolations", "key " + e.getKey() + " has " + e.getValue()
            + " orders in the database");
      }
    }
    Map<String, Integer> effectCount = new HashMap<>();
    long duplicates = 0;
    long withoutDedupe = 0;
    for (DbEffect e : h.effects()) {
      effectCount.merge(e.orderId() + ":" + e.effect(), e.count(), Integer::sum);
    }
    for (Map.Entry<String, Integer> e : effectCount.entrySet()) {
      if (e.getValue() > 1) {
        duplicates++;
        note(examples, "duplicateEffects", e.getKey() + " done " + e.getValue() + " times");
      }
      String[] parts = splitLast(e.getKey());
      String dedupeKey = parts[1] + ":" + parts[0];
      if (e.getValue() > 0 && !h.doneDedupeKeys().contains(dedupeKey)) {
        withoutDedupe++;
        note(examples, "effectsWithoutDedupeRow", e.getKey() + " has no DONE row " + dedupeKey);
      }
    }
    Map<String, List<DbDeadLetter>> deadByOrder = new HashMap<>();
    for (DbDeadLetter d : h.deadLetters()) {
      String order = d.orderId() != null ? d.orderId() : splitLast(d.messageId())[0];
      deadByOrder.computeIfAbsent(order, k -> new ArrayList<>()).add(d);
    }

    // The statuses the client read, per order, in the order they were read.
    Map<String, List<StatusSeen>> seen = new HashMap<>();
    for (StatusSeen s : h.statuses()) {
      seen.computeIfAbsent(s.orderId(), k -> new ArrayList<>()).add(s);
    }
    long orderViolations = 0;
    for (Map.Entry<String, List<StatusSeen>> e : seen.entrySet()) {
      String v = regression(e.getValue());
      if (v != null) {
        orderViolations++;
        note(examples, "orderViolations", "order " + e.getKey() + ": " + v);
      }
    }

    // Every accepted order must end.
    Set<String> acceptedIds = new LinkedHashSet<>();
    long lost = 0;
    for (Map.Entry<String, Set<String>> e : idsByKey.entrySet()) {
      for (String id : e.getValue()) {
        acceptedIds.add(id);
        DbOrder o = orders.get(id);
        if (o == null) {
          lost++;
          note(examples, "lost", "order " + id + " (key " + e.getKey() + ") is not in the"
              + " database");
          continue;
        }
        if (!o.idempotencyKey().equals(e.getKey())) {
          keyViolations++;
          note(examples, "keyViolations", "key " + e.getKey() + " was answered with order " + id
              + ", stored under key " + o.idempotencyKey());
        }
        if (!terminal(id, effectCount, deadByOrder)) {
          lost++;
          note(examples, "lost", "order " + id + " (key " + e.getKey() + "): sms="
              + effectCount.getOrDefault(id + ":sms", 0) + " coupon="
              + effectCount.getOrDefault(id + ":coupon", 0) + ", no dead letter");
        }
      }
    }

    long terminal = 0;
    long success = 0;
    long failed = 0;
    long failedNotPoison = 0;
    long unacknowledged = 0;
    for (DbOrder o : h.orders()) {
      if (!acceptedIds.contains(o.id())) {
        unacknowledged++;
      }
      boolean dead = deadByOrder.containsKey(o.id());
      boolean done = bothEffects(o.id(), effectCount);
      boolean poison = o.sku().equals(h.poisonSku());
      if (dead) {
        failed++;
        terminal++;
        if (!poison) {
          failedNotPoison++;
          note(examples, "failedNotPoison", "order " + o.id() + " sku " + o.sku() + " FAILED: "
              + deadByOrder.get(o.id()).get(0).id());
        }
      } else if (done) {
        success++;
        terminal++;
      }
      if (poison && (effectCount.getOrDefault(o.id() + ":sms", 0) > 0
          || effectCount.getOrDefault(o.id() + ":coupon", 0) > 0)) {
        orderViolations++;
        note(examples, "orderViolations", "poison order " + o.id() + " has an effect");
      }
    }

    long deadWithoutFailed = 0;
    for (Map.Entry<String, List<DbDeadLetter>> e : deadByOrder.entrySet()) {
      String last = lastStatus(seen.get(e.getKey()));
      if (!orders.containsKey(e.getKey())) {
        deadWithoutFailed++;
        note(examples, "deadLettersWithoutFailedOrder", e.getValue().get(0).id()
            + ": no such order");
      } else if ("SUCCESS".equals(last)) {
        deadWithoutFailed++;
        note(examples, "deadLettersWithoutFailedOrder", e.getValue().get(0).id()
            + ": its order was last seen SUCCESS");
      }
    }
    long failedWithoutDead = 0;
    for (Map.Entry<String, List<StatusSeen>> e : seen.entrySet()) {
      if ("FAILED".equals(lastStatus(e.getValue())) && !deadByOrder.containsKey(e.getKey())) {
        failedWithoutDead++;
        note(examples, "failedOrdersWithoutDeadLetter", "order " + e.getKey()
            + " was seen FAILED, no dead letter holds it");
      }
    }

    long maxAge = 0;
    long maxBacklog = 0;
    for (Sample s : h.samples()) {
      maxAge = Math.max(maxAge, s.oldestPendingMs());
      maxBacklog = Math.max(maxBacklog, s.backlog());
    }
    return new Verdict(h.requests().size(), idsByKey.size(),
        sentKeys.size() - idsByKey.size(), h.orders().size(), unacknowledged, terminal,
        success, failed, failedNotPoison, lost, duplicates, orderViolations, keyViolations,
        deadWithoutFailed, failedWithoutDead, withoutDedupe, h.outboxUnsent(), maxAge,
        maxBacklog, recoveries(h.samples(), h.faults(), recoveryBoundMs), examples);
  }

  /**
   * Each fault's {@link #recovery}, in order, with the default bound; each fault's baseline looks
   * no further back than the moment the previous one recovered.
   */
  static List<Recovery> recoveries(List<Sample> samples, List<FaultWindow> faults) {
    return recoveries(samples, faults, DEFAULT_RECOVERY_BOUND_MS);
  }

  /** As {@link #recoveries(List, List)} with the bound {@code boundMs}. */
  static List<Recovery> recoveries(List<Sample> samples, List<FaultWindow> faults,
      long boundMs) {
    List<Recovery> out = new ArrayList<>();
    long previous = Long.MIN_VALUE;
    for (FaultWindow f : faults) {
      Recovery r = recovery(samples, f, previous, boundMs);
      out.add(r);
      previous = r.unrecovered() ? f.startMs() + boundMs : r.recoveredAtMs();
    }
    return out;
  }

  /**
   * One fault's recovery, the rule the fault scheduler also waits on before the next fault.
   *
   * <p>Baseline: the backlog's maximum over the {@link #BASELINE_MS} before the fault started, but
   * not before {@code previousRecoveredAtMs} (the previous fault's recovery, so its own backlog
   * does not raise this one's baseline). When no sample of that window has a backlog (the
   * instance was still down or not answering), the window is the {@link #BASELINE_MS} up to the
   * last sample before the fault that has one: the level the system was last seen at, not 0,
   * which a system under steady load only reaches once the load ends.
   *
   * <p>Recovered: the first sample asked for at or after the fault's end and answered at most
   * {@code boundMs} after its start (samples are stamped when their answer arrives), whose backlog
   * is at or under the baseline while deliveries flow: the backlog is 0, or its count of completed
   * orders is above the highest count of every sample answered before it was asked (so above the
   * highest count seen before the fault). None: the fault is unrecovered and its recovery is the
   * bound.
   *
   * <p>So a reading taken during the fault but answered after it (its values may predate the
   * stall) cannot fake a recovery, and a stale reading answered after a newer one (a lower count)
   * cannot hide one: the bar is the highest count seen, not the last. The result for a moment
   * depends only on samples answered before it, so the {@link FaultPacer}, which sees samples as
   * they arrive, and the checker, which sees them all afterwards, agree. Costs O(n log n + n^2)
   * in the samples in the worst case; a run has one sample a second.
   */
  static Recovery recovery(List<Sample> unsorted, FaultWindow f, long previousRecoveredAtMs,
      long boundMs) {
    List<Sample> samples = new ArrayList<>(unsorted);
    samples.sort(Comparator.comparingLong(Sample::atMs));
    long windowEnd = f.startMs();
    long floor = previousRecoveredAtMs < f.startMs() ? previousRecoveredAtMs : Long.MIN_VALUE;
    boolean any = false;
    for (Sample s : samples) {
      if (s.atMs() < f.startMs() && s.atMs() >= Math.max(floor, f.startMs() - BASELINE_MS)
          && s.backlog() >= 0) {
        any = true;
      }
    }
    if (!any) {
      floor = Long.MIN_VALUE;
      for (Sample s : samples) {
        if (s.atMs() < f.startMs() && s.backlog() >= 0) {
          windowEnd = s.atMs() + 1; // the last sample with a backlog, included
        }
      }
    }
    long baseline = 0;
    for (Sample s : samples) {
      if (s.atMs() < windowEnd && s.atMs() >= Math.max(floor, windowEnd - BASELINE_MS)
          && s.backlog() >= 0) {
        baseline = Math.max(baseline, s.backlog());
      }
    }
    Long at = null;
    for (Sample s : samples) {
      if (s.atMs() > f.startMs() + boundMs) {
        break;
      }
      if (s.askedMs() < f.endMs() || s.backlog() < 0 || s.backlog() > baseline) {
        continue;
      }
      if (s.backlog() == 0 || (s.completed() >= 0 && s.completed() > highestCompletedBefore(
          samples, s.askedMs()))) {
        at = s.atMs();
        break;
      }
    }
    return new Recovery(f.fault(), f.target(), f.startMs(), f.endMs(), baseline, at,
        at == null ? boundMs : at - f.startMs(), at == null);
  }

  /**
   * The highest completed count among {@code sorted} (by answer time) answered before {@code
   * atMs}; {@code Long.MAX_VALUE} when none has one, so a count with nothing to compare against
   * never counts as flowing.
   */
  private static long highestCompletedBefore(List<Sample> sorted, long atMs) {
    long highest = -1;
    for (Sample s : sorted) {
      if (s.atMs() >= atMs) {
        break;
      }
      highest = Math.max(highest, s.completed());
    }
    return highest < 0 ? Long.MAX_VALUE : highest;
  }

  private static int rank(String status) {
    return switch (status) {
      case "PENDING" -> 0;
      case "PROCESSING" -> 1;
      case "SUCCESS", "FAILED" -> 2;
      default -> -1;
    };
  }

  /** A read that shows an earlier stage than one that ended before it started; null if none. */
  static String regression(List<StatusSeen> reads) {
    for (StatusSeen later : reads) {
      for (StatusSeen earlier : reads) {
        if (earlier.endMs() >= later.startMs()) {
          continue; // the two reads overlapped: either order is possible
        }
        int a = rank(earlier.status());
        int b = rank(later.status());
        if (b < a || (a == 2 && b == 2 && !earlier.status().equals(later.status()))) {
          return earlier.status() + " at " + earlier.endMs() + " ms, then " + later.status()
              + " at " + later.startMs() + " ms";
        }
      }
    }
    return null;
  }

  private static String lastStatus(List<StatusSeen> reads) {
    if (reads == null || reads.isEmpty()) {
      return null;
    }
    StatusSeen last = reads.get(0);
    for (StatusSeen s : reads) {
      if (s.startMs() >= last.startMs()) {
        last = s;
      }
    }
    return last.status();
  }

  private static boolean bothEffects(String id, Map<String, Integer> effectCount) {
    for (String e : EFFECTS) {
      if (effectCount.getOrDefault(id + ":" + e, 0) < 1) {
        return false;
      }
    }
    return true;
  }

  private static boolean terminal(String id, Map<String, Integer> effectCount,
      Map<String, List<DbDeadLetter>> deadByOrder) {
    return deadByOrder.containsKey(id) || bothEffects(id, effectCount);
  }

  private static String[] splitLast(String s) {
    int i = s.lastIndexOf(':');
    return i < 0 ? new String[] {s, ""} : new String[] {s.substring(0, i), s.substring(i + 1)};
  }

  private static void note(Map<String, List<String>> examples, String what, String example) {
    List<String> list = examples.computeIfAbsent(what, k -> new ArrayList<>());
    if (list.size() < EXAMPLES) {
      list.add(example);
    }
  }
}

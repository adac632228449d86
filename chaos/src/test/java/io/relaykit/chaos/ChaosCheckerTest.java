package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.chaos.History.DbDeadLetter;
import io.relaykit.chaos.History.DbEffect;
import io.relaykit.chaos.History.DbOrder;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.Sample;
import io.relaykit.chaos.History.StatusSeen;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The checker on hand-built histories: a clean one passes; each kind of broken promise (a lost
 * order, a duplicate effect, a status going back, a key naming two orders, dead letters out of
 * step with statuses, an effect without its dedupe row) is caught and only that one.
 */
class ChaosCheckerTest {

  /** A history builder: orders o1..oN, each accepted, both effects done once, seen SUCCESS. */
  static final class Builder {
    final List<Request> requests = new ArrayList<>();
    final List<StatusSeen> statuses = new ArrayList<>();
    final List<DbOrder> orders = new ArrayList<>();
    final List<DbEffect> effects = new ArrayList<>();
    final List<DbDeadLetter> dead = new ArrayList<>();
    final Set<String> done = new HashSet<>();
    final List<Sample> samples = new ArrayList<>();
    final List<FaultWindow> faults = new ArrayList<>();

    Builder(int n) {
      for (int i = 1; i <= n; i++) {
        String id = "o" + i;
        String key = "k" + i;
        requests.add(new Request(i * 10L, key, "sku-1", 1, "first", 0, 202, id, 3, null));
        orders.add(new DbOrder(id, key, "sku-1"));
        for (String e : Checker.EFFECTS) {
          effects.add(new DbEffect(id, e, 1));
          done.add(e + ":" + id);
        }
        statuses.add(new StatusSeen(i * 10L + 100, i * 10L + 101, id, "PENDING"));
        statuses.add(new StatusSeen(i * 10L + 500, i * 10L + 501, id, "SUCCESS"));
      }
    }

    History build() {
      return new History(requests, statuses, orders, effects, dead, done, 0, samples, faults,
          "POISON");
    }

    Checker.Verdict check() {
      return Checker.check(build());
    }

    Checker.Verdict check(long recoveryBoundMs) {
      return Checker.check(build(), recoveryBoundMs);
    }
  }

  @Test
  @DisplayName("a clean history passes with its figures")
  void cleanPasses() {
    Builder b = new Builder(5);
    // A poison order, accepted, dead-lettered, seen FAILED: terminal, not lost.
    b.requests.add(new Request(90, "kp", "POISON", 1, "first", 0, 202, "op", 2, null));
    b.requests.add(new Request(91, "kp", "POISON", 1, "repeat", 0, 202, "op", 2, null));
    b.orders.add(new DbOrder("op", "kp", "POISON"));
    b.dead.add(new DbDeadLetter("op:sms@orders.sms#sms", "op:sms", "op", "sms"));
    b.statuses.add(new StatusSeen(900, 901, "op", "FAILED"));
    Checker.Verdict v = b.check();
    assertThat(v.passed()).as("%s", v).isTrue();
    assertThat(v.acceptedKeys()).isEqualTo(6);
    assertThat(v.terminal()).isEqualTo(6);
    assertThat(v.success()).isEqualTo(5);
    assertThat(v.failed()).isEqualTo(1);
    assertThat(v.failedNotPoison()).isZero();
    assertThat(v.requests()).isEqualTo(7);
  }

  @Test
  @DisplayName("an accepted order with one effect and no dead letter is lost")
  void catchesUnfinishedOrder() {
    Builder b = new Builder(3);
    b.effects.removeIf(e -> e.orderId().equals("o2") && e.effect().equals("coupon"));
    Checker.Verdict v = b.check();
    assertThat(v.passed()).isFalse();
    assertThat(v.lost()).isEqualTo(1);
    assertThat(v.examples().get("lost")).singleElement().asString().contains("o2");
    assertThat(v.duplicateEffects()).isZero();
    assertThat(v.keyViolations()).isZero();
  }

  @Test
  @DisplayName("an accepted order the database does not hold is lost")
  void catchesMissingOrder() {
    Builder b = new Builder(3);
    b.orders.removeIf(o -> o.id().equals("o3"));
    b.effects.removeIf(e -> e.orderId().equals("o3"));
    Checker.Verdict v = b.check();
    assertThat(v.lost()).isEqualTo(1);
    assertThat(v.examples().get("lost").get(0)).contains("o3").contains("not in the database");
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("an effect done twice is a duplicate")
  void catchesDuplicateEffect() {
    Builder b = new Builder(3);
    b.effects.add(new DbEffect("o1", "sms", 1));
    Checker.Verdict v = b.check();
    assertThat(v.duplicateEffects()).isEqualTo(1);
    assertThat(v.examples().get("duplicateEffects")).containsExactly("o1:sms done 2 times");
    assertThat(v.lost()).isZero();
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("a status read after SUCCESS that shows PROCESSING is an order violation")
  void catchesStatusGoingBack() {
    Builder b = new Builder(2);
    b.statuses.add(new StatusSeen(2_000, 2_001, "o1", "PROCESSING"));
    Checker.Verdict v = b.check();
    assertThat(v.orderViolations()).isEqualTo(1);
    assertThat(v.examples().get("orderViolations").get(0)).contains("o1")
        .contains("SUCCESS").contains("PROCESSING");
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("overlapping reads may come back in either order: no violation")
  void overlappingReadsAreNotAViolation() {
    Builder b = new Builder(1);
    // Started before the SUCCESS read (510..511) ended, answered later: a stale but honest read.
    b.statuses.add(new StatusSeen(505, 600, "o1", "PROCESSING"));
    assertThat(b.check().orderViolations()).isZero();
  }

  @Test
  @DisplayName("a poison order with an effect is an order violation")
  void catchesPoisonWithEffect() {
    Builder b = new Builder(1);
    b.requests.add(new Request(90, "kp", "POISON", 1, "first", 0, 202, "op", 2, null));
    b.orders.add(new DbOrder("op", "kp", "POISON"));
    b.effects.add(new DbEffect("op", "sms", 1));
    b.done.add("sms:op");
    b.dead.add(new DbDeadLetter("op:coupon@orders.coupon#coupon", "op:coupon", "op", "coupon"));
    Checker.Verdict v = b.check();
    assertThat(v.orderViolations()).isEqualTo(1);
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("one Idempotency-Key answered with two orders is a key violation")
  void catchesKeyWithTwoOrders() {
    Builder b = new Builder(2);
    b.requests.add(new Request(900, "k1", "sku-1", 1, "repeat", 0, 202, "o9", 3, null));
    b.orders.add(new DbOrder("o9", "k1", "sku-1"));
    for (String e : Checker.EFFECTS) {
      b.effects.add(new DbEffect("o9", e, 1));
      b.done.add(e + ":o9");
    }
    Checker.Verdict v = b.check();
    // The client saw two ids for k1, and the database holds two orders under k1.
    assertThat(v.keyViolations()).isEqualTo(2);
    assertThat(v.examples().get("keyViolations")).anyMatch(s -> s.contains("[o1, o9]"));
    assertThat(v.lost()).isZero();
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("a 422 to an identical resend is a key violation")
  void catchesUnprocessableResend() {
    Builder b = new Builder(2);
    b.requests.add(new Request(900, "k2", "sku-1", 1, "repeat", 0, 422, null, 3, null));
    Checker.Verdict v = b.check();
    assertThat(v.keyViolations()).isEqualTo(1);
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("dead letters out of step with statuses are caught both ways")
  void catchesDeadLetterMismatch() {
    Builder b = new Builder(3);
    // o1 was seen SUCCESS, yet a dead letter holds its sms message.
    b.dead.add(new DbDeadLetter("o1:sms@orders.sms#sms", "o1:sms", "o1", "sms"));
    // o2 was seen FAILED last, but no dead letter holds it.
    b.statuses.add(new StatusSeen(5_000, 5_001, "o2", "FAILED"));
    Checker.Verdict v = b.check();
    assertThat(v.deadLettersWithoutFailedOrder()).isEqualTo(1);
    assertThat(v.failedOrdersWithoutDeadLetter()).isEqualTo(1);
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("an effect without its DONE dedupe row is caught")
  void catchesEffectWithoutDedupeRow() {
    Builder b = new Builder(2);
    b.done.remove("coupon:o2");
    Checker.Verdict v = b.check();
    assertThat(v.effectsWithoutDedupeRow()).isEqualTo(1);
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("recovery: the first sample after the fault at or under the backlog before it")
  void recoveryTime() {
    List<Sample> samples = new ArrayList<>();
    long[] backlog = {4, 6, 5, 3, 40, 80, 120, 90, 30, 6, 2};
    for (int i = 0; i < backlog.length; i++) {
      samples.add(new Sample(i * 1_000L, i, i, backlog[i], 10));
    }
    List<Checker.Recovery> r = Checker.recoveries(samples,
        List.of(new FaultWindow("partition", "db", "blackhole", "blackhole", 3_500, 6_500),
            new FaultWindow("kill", "instance-0", "", "", 9_500, 9_800)));
    // Baseline over 0..3.5 s: max(4, 6, 5, 3) = 6; first sample >= 6.5 s with backlog <= 6: 9 s.
    assertThat(r.get(0).baselineBacklog()).isEqualTo(6);
    assertThat(r.get(0).recoveredAtMs()).isEqualTo(9_000);
    assertThat(r.get(0).recoveryMs()).isEqualTo(5_500);
    // Baseline of the second: max over 4.5..9.5 s = 120; recovered at the first sample after it.
    assertThat(r.get(1).recoveredAtMs()).isEqualTo(10_000);
    Builder b = new Builder(1);
    b.samples.addAll(samples);
    Checker.Verdict v = b.check();
    assertThat(v.maxBacklog()).isEqualTo(120);
  }

  @Test
  @DisplayName("recovery: a fault whose 5 s before have no backlog sample (the instance still down"
      + " after an earlier fault) is measured against the last level seen, not against 0")
  void recoveryBaselineWithoutSamples() {
    List<Sample> samples = new ArrayList<>();
    long[] backlog = {50, 60, 55, -1, -1, -1, -1, -1, -1, -1, -1, 300, 120, 58, 40, 30};
    for (int i = 0; i < backlog.length; i++) {
      samples.add(new Sample(i * 1_000L, i, i, backlog[i], 10));
    }
    // Down from 2.5 s (a kill, restarted at 4 s), then a second kill at 9.5 s, restarted at 10.5 s:
    // nothing answered between 3 s and 10 s.
    List<Checker.Recovery> r = Checker.recoveries(samples,
        List.of(new FaultWindow("kill", "0", "", "", 2_500, 4_000),
            new FaultWindow("kill", "0", "", "", 9_500, 10_500)));
    assertThat(r.get(0).baselineBacklog()).isEqualTo(60);
    // The second one's 4.5..9.5 s hold no backlog: the 5 s up to the last one seen (2 s) count.
    assertThat(r.get(1).baselineBacklog()).isEqualTo(60);
    assertThat(r.get(1).recoveredAtMs()).isEqualTo(13_000);
    assertThat(r.get(1).recoveryMs()).isEqualTo(3_500);
  }
}

package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Sample;
import io.relaykit.chaos.MetricsSampler.Reading;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The /metrics sampler on a fake clock with answers completed by hand, in any order: a sample is
 * stamped when its answer arrives, one instance has one request in flight, a stale answer is
 * dropped, an instance that never answers yields "no answer" samples at the timeout.
 */
class ChaosMetricsSamplerTest {

  private final AtomicLong now = new AtomicLong();
  private final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
  private final List<Integer> asked = new ArrayList<>();
  private final List<CompletableFuture<Reading>> answers = new ArrayList<>();

  private MetricsSampler sampler(long timeoutMs) {
    return new MetricsSampler(now::get, () -> 7, timeoutMs, instance -> {
      asked.add(instance);
      CompletableFuture<Reading> f = new CompletableFuture<>();
      answers.add(f);
      return f;
    }, samples);
  }

  @Test
  @DisplayName("a sample is stamped when its answer arrives, and an instance is not asked again"
      + " while its answer is outstanding")
  void stampedOnArrivalOneInFlight() {
    MetricsSampler s = sampler(5_000);
    s.tick(List.of(0));
    now.set(1_000);
    s.tick(List.of(0));
    assertThat(asked).containsExactly(0);
    now.set(1_800);
    answers.get(0).complete(new Reading(14, 3, 100));
    assertThat(samples).containsExactly(new Sample(1_800, 7, 14, 3, 100, 0));
    now.set(2_000);
    s.tick(List.of(0));
    assertThat(asked).containsExactly(0, 0);
  }

  @Test
  @DisplayName("a delayed stale answer arriving after a newer one is dropped")
  void staleAnswerAfterNewerIsDropped() {
    MetricsSampler s = sampler(5_000);
    s.tick(List.of(0)); // A, asked at 0
    now.set(5_000);
    s.tick(List.of(0)); // A timed out: "no answer" at 5 s; B asked
    now.set(5_500);
    answers.get(1).complete(new Reading(14, 2, 10)); // B
    now.set(6_000);
    answers.get(0).complete(new Reading(11, 9, 10)); // A, read before B
    assertThat(samples).containsExactly(new Sample(5_000, 7, -1, -1, -1, 0),
        new Sample(5_500, 7, 14, 2, 10, 5_000));
    assertThat(s.staleAnswers()).isEqualTo(1);
  }

  @Test
  @DisplayName("an instance that never answers gives a no-answer sample at the timeout; another"
      + " instance is asked meanwhile")
  void neverAnsweringInstance() {
    MetricsSampler s = sampler(5_000);
    s.tick(List.of(0, 1));
    now.set(1_000);
    s.tick(List.of(0, 1));
    assertThat(asked).containsExactly(0, 1);
    now.set(1_200);
    answers.get(1).complete(new Reading(20, 1, 5));
    now.set(4_999);
    s.tick(List.of(0));
    assertThat(samples).containsExactly(new Sample(1_200, 7, 20, 1, 5, 1_000));
    now.set(5_000);
    s.tick(List.of(0));
    assertThat(samples).hasSize(2).last().isEqualTo(new Sample(5_000, 7, -1, -1, -1, 0));
    assertThat(asked).containsExactly(0, 1, 0);
    assertThat(samples).isSortedAccordingTo(java.util.Comparator.comparingLong(Sample::atMs));
  }

  @Test
  @DisplayName("an answer that arrives after the recovery bound is no recovery within it")
  void answerAfterBoundIsNoRecovery() {
    MetricsSampler s = sampler(5_000);
    long[] completed = {10, 20, 30, 40};
    for (int i = 0; i < completed.length; i++) {
      now.set(i * 1_000L);
      s.tick(List.of(0));
      answers.get(i).complete(new Reading(completed[i], 5, 0));
    }
    for (long t = 4_000; t <= 12_000; t += 1_000) {
      now.set(t);
      s.tick(List.of()); // the instance is down
    }
    now.set(13_000); // asked inside the bound (3.5 s + 10 s)...
    s.tick(List.of(0));
    now.set(14_000); // ...answered after it
    answers.get(4).complete(new Reading(50, 2, 0));
    FaultWindow f = new FaultWindow("kill", "0", "", "kill", 3_500, 4_000);
    Checker.Recovery r = Checker.recoveries(new ArrayList<>(samples), List.of(f), 10_000).get(0);
    assertThat(r.unrecovered()).isTrue();
    assertThat(r.recoveryMs()).isEqualTo(10_000);
    // With a longer bound the same answer is the recovery, at its arrival.
    Checker.Recovery later = Checker.recoveries(new ArrayList<>(samples), List.of(f), 60_000)
        .get(0);
    assertThat(later.recoveredAtMs()).isEqualTo(14_000);
  }
}

package io.relaykit.chaos;

import io.relaykit.chaos.History.Sample;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/** Stub with the old behaviour (stamped when asked, no in-flight guard), for the failing run. */
final class MetricsSampler {
  record Reading(long completed, long backlog, long oldestPendingMs) {}

  interface Asker {
    CompletableFuture<Reading> ask(int instance);
  }

  private final LongSupplier nowMs;
  private final LongSupplier accepted;
  private final Asker asker;
  private final List<Sample> samples;

  MetricsSampler(LongSupplier nowMs, LongSupplier accepted, long timeoutMs, Asker asker,
      List<Sample> samples) {
    this.nowMs = nowMs;
    this.accepted = accepted;
    this.asker = asker;
    this.samples = samples;
  }

  long staleAnswers() {
    return 0;
  }

  void tick(List<Integer> up) {
    long at = nowMs.getAsLong();
    long acc = accepted.getAsLong();
    if (up.isEmpty()) {
      samples.add(new Sample(at, acc, -1, -1, -1));
      return;
    }
    asker.ask(up.get(0)).whenComplete((r, e) -> samples.add(new Sample(at, acc,
        r == null ? -1 : r.completed(), r == null ? -1 : r.backlog(),
        r == null ? -1 : r.oldestPendingMs())));
  }
}

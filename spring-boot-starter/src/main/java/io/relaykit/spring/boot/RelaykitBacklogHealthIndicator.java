package io.relaykit.spring.boot;

import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSample;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The outbox backlog's health, from core's {@link BacklogMonitor} verdict: {@code UP} while the
 * verdict is not one of the configured ones, {@code OUT_OF_SERVICE} (by default for {@link
 * BacklogVerdict#STALLED}, {@link BacklogVerdict#SUSTAINED_GROWTH} and {@link
 * BacklogVerdict#OVER_BOUND}) or {@code DOWN} (by default for none) when it is. Registered as the
 * health contributor {@code relaykit}, in the readiness group by default and never in liveness (a
 * backlog is not fixed by restarting the pod that has it).
 *
 * <p>How it samples: each health check that finds the latest sample older than the sample
 * interval asks the outbox for its unsent count and oldest unsent age ({@link OutboxStore#stats},
 * one aggregate query on JDBC storage) and records them; checks in between answer from the latest
 * sample. The verdict therefore needs at least {@code min-samples} health checks within the window
 * (Kubernetes probes every 10 s give 30 in the default 5 minutes); fewer is {@code HEALTHY}, no
 * evidence. Memory is bounded by the monitor's {@link BacklogMonitor.Config#maxSamples()}.
 *
 * <p>Details: {@code verdict} (the constant's name, {@code STALLED}), {@code depth}, {@code
 * oldestAge} (ISO-8601), {@code samples}, {@code depthPerSecond} (the trend), {@code sampledAt},
 * and {@code maxUnsent} for a bounded outbox. They are shown as Spring Boot's {@code
 * management.endpoint.health.show-details} allows; the probe groups never show them, the path
 * {@code /actuator/health/relaykit} does.
 *
 * <p>Failure: when the outbox cannot answer (database down or slow past its JDBC timeouts) the
 * health is {@code DOWN} with the error's message, and the check takes as long as the store's
 * query does; the next check past the interval asks again. A clock that went back behind the
 * latest sample costs that sample only. Thread-safe.
 */
public final class RelaykitBacklogHealthIndicator implements HealthIndicator {

  private final OutboxStore outbox;
  private final BacklogMonitor monitor;
  private final InstantSource clock;
  private final Duration sampleInterval;
  private final Set<BacklogVerdict> outOfService;
  private final Set<BacklogVerdict> down;
  private final OutboxBound bound;
  private Instant lastSample;

  /**
   * A health indicator over {@code outbox}.
   *
   * @param outbox the outbox whose backlog is judged
   * @param config the monitor's thresholds; its {@code maxDepth} is replaced by the outbox's
   *     bound when the outbox has one
   * @param clock the time samples are stamped with and ages are measured at
   * @param sampleInterval the shortest time between two samples; not negative
   * @param outOfService the verdicts that make the health {@code OUT_OF_SERVICE}
   * @param down the verdicts that make it {@code DOWN}; must not share a verdict with {@code
   *     outOfService}, and neither may hold {@link BacklogVerdict#HEALTHY}
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the interval is negative, a verdict is in both sets, or
   *     HEALTHY is in one
   */
  public RelaykitBacklogHealthIndicator(OutboxStore outbox, BacklogMonitor.Config config,
      InstantSource clock, Duration sampleInterval, Set<BacklogVerdict> outOfService,
      Set<BacklogVerdict> down) {
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    Objects.requireNonNull(config, "config");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.sampleInterval = Objects.requireNonNull(sampleInterval, "sampleInterval");
    if (sampleInterval.isNegative()) {
      throw new IllegalArgumentException("sampleInterval must not be negative, was "
          + sampleInterval);
    }
    this.outOfService = copy("outOfService", outOfService);
    this.down = copy("down", down);
    for (BacklogVerdict v : this.down) {
      if (this.outOfService.contains(v)) {
        throw new IllegalArgumentException("verdict " + name(v) + " is both in "
            + SpringConfigKeys.HEALTH_OUT_OF_SERVICE + " and in " + SpringConfigKeys.HEALTH_DOWN);
      }
    }
    OutboxBound b = outbox.bound();
    this.bound = b != null && b.isBounded() ? b : null;
    BacklogMonitor.Config c = bound == null ? config : new BacklogMonitor.Config(config.window(),
        config.minSamples(), config.maxSamples(), config.growthPerSecond(), config.highDepth(),
        config.stallAge(), bound.maxUnsent());
    this.monitor = new BacklogMonitor(c, clock);
  }

  /**
   * Samples the outbox if the latest sample is older than the interval, then maps the verdict.
   *
   * @return UP, OUT_OF_SERVICE or DOWN with the details in the class comment; DOWN with an {@code
   *     error} detail when the outbox cannot answer
   */
  @Override
  public Health health() {
    try {
      sampleIfDue();
    } catch (RuntimeException e) {
      return Health.down().withDetail("error", "relaykit could not read the outbox backlog: "
          + e.getMessage()).build();
    }
    BacklogSnapshot s = monitor.snapshot();
    Status status = down.contains(s.verdict()) ? Status.DOWN
        : outOfService.contains(s.verdict()) ? Status.OUT_OF_SERVICE : Status.UP;
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("verdict", s.verdict().name());
    details.put("depth", s.depth());
    details.put("oldestAge", s.oldestAge().toString());
    details.put("samples", s.samples());
    details.put("depthPerSecond", s.depthPerSecond());
    if (s.at() != null) {
      details.put("sampledAt", s.at().toString());
    }
    if (bound != null) {
      details.put("maxUnsent", bound.maxUnsent());
    }
    return Health.status(status).withDetails(details).build();
  }

  /**
   * The monitor's current report, without sampling.
   *
   * @return the latest snapshot; HEALTHY with no numbers before the first sample
   */
  public BacklogSnapshot snapshot() {
    return monitor.snapshot();
  }

  private synchronized void sampleIfDue() {
    Instant now = clock.instant();
    if (lastSample != null && now.isBefore(lastSample.plus(sampleInterval))) {
      return;
    }
    OutboxStats stats = outbox.stats(now);
    try {
      monitor.record(new BacklogSample(now, stats.unsent(), stats.oldestUnsentAge()));
    } catch (IllegalArgumentException e) {
      return; // the clock went back behind the latest sample: this one does not fit the window
    }
    lastSample = now;
  }

  /**
   * Parses a comma-separated list of verdicts, written in lower case with dashes ({@code
   * stalled,sustained-growth}); any case, blanks around the commas and an empty list are
   * accepted.
   *
   * @param key the property the list came from, for the message
   * @param value the list; null or blank for none
   * @return the verdicts
   * @throws IllegalArgumentException naming the key, the bad entry and the accepted ones, or when
   *     the list holds {@code healthy}
   */
  static Set<BacklogVerdict> parseVerdicts(String key, String value) {
    Set<BacklogVerdict> out = EnumSet.noneOf(BacklogVerdict.class);
    if (value == null || value.isBlank()) {
      return out;
    }
    for (String part : value.split(",", -1)) {
      String wanted = part.strip().replace('-', '_').toUpperCase(Locale.ROOT);
      if (wanted.isEmpty()) {
        continue;
      }
      BacklogVerdict found = null;
      for (BacklogVerdict v : BacklogVerdict.values()) {
        if (v.name().equals(wanted)) {
          found = v;
        }
      }
      if (found == null || found == BacklogVerdict.HEALTHY) {
        StringBuilder known = new StringBuilder();
        for (BacklogVerdict v : BacklogVerdict.values()) {
          if (v != BacklogVerdict.HEALTHY) {
            known.append(known.length() == 0 ? "" : ", ").append(name(v));
          }
        }
        throw new IllegalArgumentException(key + ": '" + part.strip() + "' is not a backlog"
            + " verdict that can make relaykit unhealthy; use any of " + known);
      }
      out.add(found);
    }
    return out;
  }

  private static Set<BacklogVerdict> copy(String what, Set<BacklogVerdict> verdicts) {
    Objects.requireNonNull(verdicts, what);
    Set<BacklogVerdict> out = EnumSet.noneOf(BacklogVerdict.class);
    out.addAll(verdicts);
    if (out.contains(BacklogVerdict.HEALTHY)) {
      throw new IllegalArgumentException(what + " must not hold HEALTHY");
    }
    return out;
  }

  private static String name(BacklogVerdict v) {
    return v.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  @Override
  public String toString() {
    return "RelaykitBacklogHealthIndicator[outOfService=" + outOfService + ", down=" + down
        + ", " + monitor + "]";
  }
}

package io.relaykit.chaos;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The options of one chaos run, validated: a bad value fails with an {@link UsageException} naming
 * the option and the value (the command exits 2).
 *
 * <p>H2 runs exactly one demo instance: the demo opens its H2 file with {@code AUTO_SERVER=TRUE},
 * so the first process hosts the database and every other instance reaches it through that host;
 * a kill -9 of the host would take the database away from all of them, which tests H2's server
 * mode, not relaykit. PostgreSQL is a server of its own, so several instances share it.
 */
public record ChaosOptions(
    String storage,
    String transport,
    String idempotency,
    int instances,
    int orders,
    double rate,
    double failRate,
    Set<String> faults,
    int kills,
    int brokerKills,
    int partitions,
    Duration partitionLength,
    List<String> partitionModes,
    List<String> partitionTargets,
    long seed,
    Path reportDir,
    Duration settle,
    Duration recoveryBound,
    double repeatShare,
    double poisonShare,
    String postgresUrl) {

  static final List<String> STORAGES = List.of("h2", "postgres");
  static final List<String> TRANSPORTS = List.of("memory", "kafka", "rabbitmq");
  static final List<String> IDEMPOTENCY = List.of("db", "redis");
  static final List<String> FAULTS = List.of("kill", "partition", "broker-kill", "clock");
  static final List<String> MODES = List.of("cut", "refuse", "blackhole", "latency");
  static final List<String> TARGETS = List.of("db", "redis", "rabbitmq", "kafka");
  static final String POISON_SKU = "POISON";
  static final String DEFAULT_POSTGRES_URL =
      "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  static final String USAGE = String.join("\n",
      "usage: relaykit chaos [options]",
      "  --storage h2|postgres          database (default h2)",
      "  --transport memory|kafka|rabbitmq  (default memory)",
      "  --idempotency db|redis         redis: a Redis fast tier over the H2 store (H2 only)",
      "  --instances N                  demo instances (PostgreSQL only; H2 runs one)",
      "  --orders N                     distinct orders to place (default 1000)",
      "  --rate R                       orders per second (default 50)",
      "  --duration SECONDS             send for this long: sets --orders to R x SECONDS",
      "  --fail-rate F                  transient consumer failures, 0 <= F < 1 (default 0.02)",
      "  --faults LIST                  kill,partition,broker-kill,clock or none (default kill)",
      "  --kills N                      kill -9 count for the kill fault (default 3)",
      "  --broker-kills N               kill -9 count of the run's Kafka broker (default 1)",
      "  --partitions N                 partition count (default 1)",
      "  --partition-seconds S          length of each partition and clock skew (default 5)",
      "  --partition-modes LIST         cut,refuse,blackhole,latency (default all)",
      "  --partition-targets LIST       db,redis,rabbitmq,kafka (default: every proxied one)",
      "  --seed S                       the same seed gives the same schedule (default 1)",
      "  --report DIR                   report.json, report.html, client-log.jsonl",
      "                                 (default target/chaos/<time>)",
      "  --settle SECONDS               how long the backlog may take to drain (default 120)",
      "  --recovery-bound SECONDS       the next fault waits until the previous one recovered",
      "                                 (backlog back at its level before, deliveries flowing),",
      "                                 at most this long from its start; a fault not recovered",
      "                                 by then fails the run (default 60)",
      "  --repeat-share P               share of requests sent again with their key (0.1)",
      "  --poison-share P               share of orders for the poison SKU (0.05)",
      "  --postgres-url URL             server to use (default $RELAYKIT_POSTGRES_URL or",
      "                                 " + DEFAULT_POSTGRES_URL + ")");

  // The defaults, shared by parse and replayArgs.
  private static final String D_STORAGE = "h2";
  private static final String D_TRANSPORT = "memory";
  private static final String D_IDEMPOTENCY = "db";
  private static final int D_INSTANCES = 1;
  private static final int D_ORDERS = 1000;
  private static final double D_RATE = 50;
  private static final double D_FAIL_RATE = 0.02;
  private static final Set<String> D_FAULTS = Set.of("kill");
  private static final int D_KILLS = 3;
  private static final int D_BROKER_KILLS = 1;
  private static final int D_PARTITIONS = 1;
  private static final int D_PARTITION_SECONDS = 5;
  private static final long D_SEED = 1;
  private static final int D_SETTLE = 120;
  private static final int D_RECOVERY_BOUND = 60;
  private static final double D_REPEAT_SHARE = 0.1;
  private static final double D_POISON_SHARE = 0.05;

  /** A bad command line; the message names the option and the value. */
  public static final class UsageException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  public ChaosOptions {
    require(STORAGES.contains(storage), "--storage must be one of " + STORAGES + ", was '"
        + storage + "'");
    require(TRANSPORTS.contains(transport), "--transport must be one of " + TRANSPORTS
        + ", was '" + transport + "'");
    require(IDEMPOTENCY.contains(idempotency), "--idempotency must be one of " + IDEMPOTENCY
        + ", was '" + idempotency + "'");
    require(!(idempotency.equals("redis") && storage.equals("postgres")),
        "--idempotency redis runs over H2 only (the demo's Redis tier fronts its H2 store)");
    require(instances >= 1 && instances <= 8, "--instances must be in 1..8, was " + instances);
    require(instances == 1 || storage.equals("postgres"), "--instances " + instances
        + " needs --storage postgres: on H2 the first instance hosts the file (AUTO_SERVER) and"
        + " a kill of that host takes the database from every other instance");
    require(orders >= 1 && orders <= 1_000_000, "--orders must be in 1..1000000, was " + orders);
    require(rate > 0 && rate <= 5_000, "--rate must be in (0, 5000], was " + rate);
    require(failRate >= 0 && failRate < 1, "--fail-rate must be in [0, 1), was " + failRate);
    for (String f : faults) {
      require(FAULTS.contains(f), "unknown fault '" + f + "'; known: " + FAULTS + " or none");
    }
    require(kills >= 0 && kills <= 1000, "--kills must be in 0..1000, was " + kills);
    require(brokerKills >= 0 && brokerKills <= 1000, "--broker-kills must be in 0..1000, was "
        + brokerKills);
    require(partitions >= 0 && partitions <= 1000, "--partitions must be in 0..1000, was "
        + partitions);
    require(!partitionLength.isNegative() && !partitionLength.isZero()
        && partitionLength.toSeconds() <= 600, "--partition-seconds must be in 1..600");
    for (String m : partitionModes) {
      require(MODES.contains(m), "unknown partition mode '" + m + "'; known: " + MODES);
    }
    require(!partitionModes.isEmpty(), "--partition-modes must name at least one mode");
    for (String t : partitionTargets) {
      require(TARGETS.contains(t), "unknown partition target '" + t + "'; known: " + TARGETS);
    }
    require(settle.toSeconds() >= 1 && settle.toSeconds() <= 3600,
        "--settle must be in 1..3600 seconds");
    require(recoveryBound.toSeconds() >= 1 && recoveryBound.toSeconds() <= 3600,
        "--recovery-bound must be in 1..3600 seconds");
    require(repeatShare >= 0 && repeatShare <= 1, "--repeat-share must be in [0, 1]");
    require(poisonShare >= 0 && poisonShare < 1, "--poison-share must be in [0, 1)");
    faults = Set.copyOf(faults);
    partitionModes = List.copyOf(partitionModes);
    partitionTargets = List.copyOf(partitionTargets);
  }

  private static void require(boolean ok, String message) {
    if (!ok) {
      throw new UsageException(message);
    }
  }

  /**
   * The partition targets this run can cut: the ones asked for, or by default every service
   * that this configuration reaches through a proxy.
   */
  List<String> effectiveTargets() {
    List<String> proxied = new ArrayList<>();
    if (storage.equals("postgres")) {
      proxied.add("db");
    }
    if (idempotency.equals("redis")) {
      proxied.add("redis");
    }
    if (transport.equals("rabbitmq")) {
      proxied.add("rabbitmq");
    }
    if (transport.equals("kafka")) {
      proxied.add("kafka");
    }
    if (partitionTargets.isEmpty()) {
      require(!proxied.isEmpty(), "the partition fault needs a service behind a proxy: use"
          + " --storage postgres, --idempotency redis or --transport rabbitmq|kafka (H2 is"
          + " embedded, the memory transport is in-process)");
      return proxied;
    }
    for (String t : partitionTargets) {
      require(proxied.contains(t), "--partition-targets " + t + " is not used by this run"
          + " (proxied here: " + proxied + ")");
    }
    return partitionTargets;
  }

  /**
   * Parses {@code --name value} pairs over the defaults.
   *
   * @throws UsageException naming an unknown option, a missing value or a bad value
   */
  public static ChaosOptions parse(String... args) {
    String storage = D_STORAGE;
    String transport = D_TRANSPORT;
    String idempotency = D_IDEMPOTENCY;
    int instances = D_INSTANCES;
    int orders = D_ORDERS;
    double rate = D_RATE;
    Double duration = null;
    double failRate = D_FAIL_RATE;
    Set<String> faults = D_FAULTS;
    int kills = D_KILLS;
    int brokerKills = D_BROKER_KILLS;
    int partitions = D_PARTITIONS;
    int partitionSeconds = D_PARTITION_SECONDS;
    List<String> modes = MODES;
    List<String> targets = List.of();
    long seed = D_SEED;
    Path report = null;
    int settle = D_SETTLE;
    int recoveryBound = D_RECOVERY_BOUND;
    double repeat = D_REPEAT_SHARE;
    double poison = D_POISON_SHARE;
    String env = System.getenv("RELAYKIT_POSTGRES_URL");
    String postgresUrl = env == null || env.isBlank() ? DEFAULT_POSTGRES_URL : env;
    for (int i = 0; i < args.length; i++) {
      String name = args[i];
      if (name.equals("-h") || name.equals("--help")) {
        throw new UsageException("help");
      }
      if (!name.startsWith("--")) {
        throw new UsageException("unexpected argument '" + name + "'");
      }
      if (i + 1 >= args.length) {
        throw new UsageException(name + " needs a value");
      }
      String value = args[++i];
      switch (name) {
        case "--storage" -> storage = value.toLowerCase(Locale.ROOT);
        case "--transport" -> transport = value.toLowerCase(Locale.ROOT);
        case "--idempotency" -> idempotency = value.toLowerCase(Locale.ROOT);
        case "--instances" -> instances = integer(name, value);
        case "--orders" -> orders = integer(name, value);
        case "--rate" -> rate = number(name, value);
        case "--duration" -> duration = number(name, value);
        case "--fail-rate" -> failRate = number(name, value);
        case "--faults" -> faults = list(value).contains("none") && list(value).size() == 1
            ? Set.of() : new LinkedHashSet<>(list(value));
        case "--kills" -> kills = integer(name, value);
        case "--broker-kills" -> brokerKills = integer(name, value);
        case "--partitions" -> partitions = integer(name, value);
        case "--partition-seconds" -> partitionSeconds = integer(name, value);
        case "--partition-modes" -> modes = list(value);
        case "--partition-targets" -> targets = list(value);
        case "--seed" -> seed = longValue(name, value);
        case "--report" -> report = Path.of(value);
        case "--settle" -> settle = integer(name, value);
        case "--recovery-bound" -> recoveryBound = integer(name, value);
        case "--repeat-share" -> repeat = number(name, value);
        case "--poison-share" -> poison = number(name, value);
        case "--postgres-url" -> postgresUrl = value;
        default -> throw new UsageException("unknown option " + name
            + "; see relaykit chaos --help");
      }
    }
    if (duration != null) {
      require(duration > 0 && duration <= 86_400, "--duration must be in (0, 86400] seconds");
      orders = (int) Math.max(1, Math.round(rate * duration));
    }
    if (report == null) {
      report = Path.of("target", "chaos", java.time.format.DateTimeFormatter
          .ofPattern("yyyyMMdd-HHmmss").withZone(java.time.ZoneOffset.UTC)
          .format(java.time.Instant.now()));
    }
    return new ChaosOptions(storage, transport, idempotency, instances, orders, rate, failRate,
        faults, kills, brokerKills, partitions, Duration.ofSeconds(partitionSeconds), modes,
        targets, seed, report, Duration.ofSeconds(settle), Duration.ofSeconds(recoveryBound),
        repeat, poison, postgresUrl);
  }

  /**
   * The options that make this run, for the report's replay command: only those that differ from
   * their default and that this run uses ({@code --kills} only with the kill fault, the partition
   * options only with the partition fault, {@code --partition-seconds} with partitions or clock
   * skews, {@code --broker-kills} only with broker kills). {@link #parse} of the result gives a run
   * with the same schedule, load and checks. Left out: {@code --report} (where this run wrote) and
   * {@code --postgres-url} (it comes from the environment and may carry a password).
   *
   * @return {@code --name value} pairs, in the order of {@link #USAGE}
   */
  List<String> replayArgs() {
    List<String> c = new ArrayList<>();
    if (!storage.equals(D_STORAGE)) {
      c.addAll(List.of("--storage", storage));
    }
    if (!transport.equals(D_TRANSPORT)) {
      c.addAll(List.of("--transport", transport));
    }
    if (!idempotency.equals(D_IDEMPOTENCY)) {
      c.addAll(List.of("--idempotency", idempotency));
    }
    if (instances != D_INSTANCES) {
      c.addAll(List.of("--instances", Integer.toString(instances)));
    }
    if (orders != D_ORDERS) {
      c.addAll(List.of("--orders", Integer.toString(orders)));
    }
    if (rate != D_RATE) {
      c.addAll(List.of("--rate", text(rate)));
    }
    if (failRate != D_FAIL_RATE) {
      c.addAll(List.of("--fail-rate", text(failRate)));
    }
    if (!faults.equals(D_FAULTS)) {
      c.addAll(List.of("--faults", faults.isEmpty() ? "none"
          : String.join(",", faults.stream().sorted(
              java.util.Comparator.comparingInt(FAULTS::indexOf)).toList())));
    }
    boolean partition = faults.contains("partition");
    if (faults.contains("kill") && kills != D_KILLS) {
      c.addAll(List.of("--kills", Integer.toString(kills)));
    }
    if (faults.contains("broker-kill") && brokerKills != D_BROKER_KILLS) {
      c.addAll(List.of("--broker-kills", Integer.toString(brokerKills)));
    }
    if (partition && partitions != D_PARTITIONS) {
      c.addAll(List.of("--partitions", Integer.toString(partitions)));
    }
    if ((partition || faults.contains("clock"))
        && partitionLength.toSeconds() != D_PARTITION_SECONDS) {
      c.addAll(List.of("--partition-seconds", Long.toString(partitionLength.toSeconds())));
    }
    if (partition && !partitionModes.equals(MODES)) {
      c.addAll(List.of("--partition-modes", String.join(",", partitionModes)));
    }
    if (partition && !partitionTargets.isEmpty()) {
      c.addAll(List.of("--partition-targets", String.join(",", partitionTargets)));
    }
    if (seed != D_SEED) {
      c.addAll(List.of("--seed", Long.toString(seed)));
    }
    if (settle.toSeconds() != D_SETTLE) {
      c.addAll(List.of("--settle", Long.toString(settle.toSeconds())));
    }
    if (recoveryBound.toSeconds() != D_RECOVERY_BOUND) {
      c.addAll(List.of("--recovery-bound", Long.toString(recoveryBound.toSeconds())));
    }
    if (repeatShare != D_REPEAT_SHARE) {
      c.addAll(List.of("--repeat-share", text(repeatShare)));
    }
    if (poisonShare != D_POISON_SHARE) {
      c.addAll(List.of("--poison-share", text(poisonShare)));
    }
    return c;
  }

  /** {@code d} as the shortest text that parses back to it: {@code 80}, {@code 0.02}. */
  private static String text(double d) {
    return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
  }

  private static List<String> list(String value) {
    List<String> out = new ArrayList<>();
    for (String s : value.split(",")) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (!t.isEmpty()) {
        out.add(t);
      }
    }
    return out;
  }

  private static int integer(String name, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new UsageException(name + " must be a whole number, was '" + value + "'");
    }
  }

  private static long longValue(String name, String value) {
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new UsageException(name + " must be a whole number, was '" + value + "'");
    }
  }

  private static double number(String name, String value) {
    try {
      double d = Double.parseDouble(value);
      if (Double.isFinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new UsageException(name + " must be a number, was '" + value + "'");
  }
}

package io.relaykit.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.relaykit.chaos.ChaosOptions.UsageException;
import io.relaykit.chaos.History.DbDeadLetter;
import io.relaykit.chaos.History.DbEffect;
import io.relaykit.chaos.History.DbOrder;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Sample;
import io.relaykit.examples.Faketime;
import io.relaykit.examples.kafka.LocalKafkaBroker;
import io.relaykit.tck.FaultProxy;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code ./relaykit chaos}: starts the checkout demo as child processes (one on H2, up to 8
 * sharing one PostgreSQL schema), routes their PostgreSQL, Redis and RabbitMQ connections through
 * {@link FaultProxy} instances, places orders over HTTP while a seeded schedule injects faults,
 * lets the system settle, then checks the recorded history against what the database holds
 * ({@link Checker}) and writes {@code report.json}, {@code report.html} and the client log.
 *
 * <p>Exit codes: 0 the verdict passed (nothing lost, nothing twice, no violation); 1 it did not;
 * 2 bad usage; 3 the run could not be made (a service is unreachable, an instance did not start).
 * Every child process, proxy, scratch folder and PostgreSQL schema it made is removed at the end,
 * also on Ctrl-C (a shutdown hook kills the process trees).
 */
public final class ChaosRun implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The least time between one fault's recovery (or its bound) and the start of the next. */
  static final Duration HEALTHY_GAP = Duration.ofSeconds(2);
  private static final Pattern PG_URL =
      Pattern.compile("jdbc:postgresql://([^/:?]+)(?::(\\d+))?/([^?]*)(\\?.*)?");

  /** What a run found: its exit code, verdict (null if it could not run) and report folder. */
  public record Result(int exitCode, Checker.Verdict verdict, Path reportDir, String message) {}

  /** A service the run needs is not there; the message names it and how to start it. */
  static final class Unavailable extends Exception {
    private static final long serialVersionUID = 1L;

    Unavailable(String message) {
      super(message);
    }
  }

  private final ChaosOptions o;
  private final PrintStream out;
  private final String runId = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final List<DemoInstance> instances = new CopyOnWriteArrayList<>();
  private final Map<String, FaultProxy> proxies = new LinkedHashMap<>();
  private final List<FaultWindow> windows = Collections.synchronizedList(new ArrayList<>());
  private final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
  private final Map<String, Fault> faults = new LinkedHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread hook = new Thread(this::cleanUp, "chaos-cleanup");
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();
  private Path scratch;
  private String schema;
  /** The Kafka broker this run started (--transport kafka without a configured one). */
  private volatile LocalKafkaBroker broker;
  private volatile String fatal;

  private ChaosRun(ChaosOptions options, PrintStream out) {
    this.o = options;
    this.out = out;
  }

  public static void main(String[] args) {
    // The snapshot opens the demo's H2 file and may host it: H2's lock socket and AUTO_SERVER
    // port on loopback only, as the demo's own launcher does (a JVM-wide property H2 reads once).
    if (System.getProperty("h2.bindAddress") == null) {
      System.setProperty("h2.bindAddress", "127.0.0.1");
    }
    System.exit(run(args, System.out, System.err).exitCode());
  }

  /** Parses {@code args} and runs; never calls {@code System.exit}. */
  public static Result run(String[] args, PrintStream out, PrintStream err) {
    ChaosOptions options;
    try {
      options = ChaosOptions.parse(args);
      checkAvailable(options);
    } catch (UsageException e) {
      if (e.getMessage().equals("help")) {
        out.println(ChaosOptions.USAGE);
        return new Result(0, null, null, "help");
      }
      err.println("relaykit chaos: " + e.getMessage());
      err.println(ChaosOptions.USAGE);
      return new Result(2, null, null, e.getMessage());
    }
    return run(options, out, err);
  }

  /** Runs {@code options}. */
  public static Result run(ChaosOptions options, PrintStream out, PrintStream err) {
    try (ChaosRun run = new ChaosRun(options, out)) {
      Runtime.getRuntime().addShutdownHook(run.hook);
      return run.execute();
    } catch (Unavailable e) {
      err.println("relaykit chaos: " + e.getMessage());
      return new Result(3, null, options.reportDir(), e.getMessage());
    } catch (Exception e) {
      err.println("relaykit chaos: the run could not be made: " + e);
      return new Result(3, null, options.reportDir(), String.valueOf(e));
    }
  }

  /** Combinations that cannot run, refused with the reason before anything starts. */
  static void checkAvailable(ChaosOptions o) {
    boolean ownBroker = o.transport().equals("kafka")
        && blank(System.getenv("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS"));
    if (o.faults().contains("broker-kill") && !ownBroker) {
      throw new UsageException("fault broker-kill kills the Kafka broker the run starts itself:"
          + " it needs --transport kafka without RELAYKIT_KAFKA_BOOTSTRAP_SERVERS");
    }
    if (o.faults().contains("partition") && o.partitions() > 0) {
      List<String> targets = o.effectiveTargets();
      if (targets.contains("kafka") && !ownBroker) {
        throw new UsageException("a kafka partition goes through the broker the run starts"
            + " itself (it advertises the proxy's port): unset RELAYKIT_KAFKA_BOOTSTRAP_SERVERS"
            + " or leave kafka out of --partition-targets");
      }
    }
  }

  private static boolean blank(String s) {
    return s == null || s.isBlank();
  }

  private long t0;

  private Result execute() throws Exception {
    Files.createDirectories(o.reportDir());
    scratch = Files.createTempDirectory("relaykit-chaos-");
    Map<String, String> env = prepareServices();
    faults.put("kill", new KillFault(instances));
    faults.put("partition", new PartitionFault(proxies));
    faults.put("clock", new ClockFault(instances, Faketime::environment));
    if (broker != null) {
      LocalKafkaBroker b = broker;
      faults.put("broker-kill", new BrokerKillFault(new BrokerKillFault.Broker() {
        @Override
        public long pid() {
          return b.pid();
        }

        @Override
        public void kill() {
          b.kill();
        }

        @Override
        public void restart() {
          b.restart();
        }
      }));
    }

    List<String> args = new ArrayList<>(List.of(
        "--data", scratch.resolve("data").toString(),
        "--storage", o.storage().equals("postgres") ? "postgres"
            : o.idempotency().equals("redis") ? "redis" : "h2",
        "--transport", o.transport(),
        "--fail-rate", Double.toString(o.failRate()),
        "--poison-sku", ChaosOptions.POISON_SKU,
        "--lease", "3",
        "--namespace", "chaos-" + runId));
    out.printf(Locale.ROOT, "[chaos] run %s: storage %s, transport %s, idempotency %s,"
        + " %d instance(s), %d orders at %.0f/s, faults %s, seed %d, scratch %s%n", runId,
        o.storage(), o.transport(), o.idempotency(), o.instances(), o.orders(), o.rate(),
        o.faults().isEmpty() ? "none" : String.join(",", new java.util.TreeSet<>(o.faults())),
        o.seed(), scratch);
    for (int i = 0; i < o.instances(); i++) {
      DemoInstance d = new DemoInstance(i, args, env, List.of(),
          o.reportDir().resolve("instance-" + i + ".log"));
      instances.add(d);
      // One at a time: the first creates the tables, the others find them.
      d.start();
      out.println("[chaos] instance " + i + " listening on " + d.base() + " (pid " + d.pid()
          + ")");
    }

    // Every time in the history counts from here: the load starts now.
    t0 = System.nanoTime();
    long loadMs = (long) (o.orders() * 1000 / o.rate());
    List<FaultSchedule.Event> schedule = FaultSchedule.plan(o, loadMs);
    LoadDriver driver = new LoadDriver(o, runId, instances, t0);
    Thread sampler = daemon("chaos-sampler", () -> sample(driver));
    sampler.start();
    Thread faulter = daemon("chaos-faults", () -> injectAll(schedule, t0));
    faulter.start();
    Thread poller = daemon("chaos-status", () -> {
      SplittableRandom random = new SplittableRandom(o.seed());
      while (!Thread.currentThread().isInterrupted()) {
        driver.sampleStatuses(40, random);
        LockSupport.parkNanos(1_000_000_000L);
      }
    });
    poller.start();

    driver.run();
    long loadEndMs = driver.nowMs();
    out.printf(Locale.ROOT, "[chaos] load done after %.1f s: %d of %d orders accepted%n",
        loadEndMs / 1000.0, driver.accepted(), o.orders());
    // Each fault may wait its recovery bound: give the schedule that, at least 10 minutes, then
    // stop it, so no fault is injected while the run settles (the pacer reports the cut).
    long scheduleMs = schedule.size() * (o.recoveryBound().toMillis() + HEALTHY_GAP.toMillis()
        + o.partitionLength().toMillis() + 30_000L);
    faulter.join(Math.max(Duration.ofMinutes(10).toMillis(), scheduleMs));
    if (faulter.isAlive()) {
      faulter.interrupt();
      faulter.join(60_000);
    }
    poller.interrupt();
    poller.join(15_000);
    for (FaultProxy p : proxies.values()) {
      p.heal();
    }
    for (DemoInstance d : instances) {
      if (!d.up()) {
        d.start();
      }
    }
    long settleStartMs = driver.nowMs();
    boolean settled = driver.settle(System.nanoTime() + o.settle().toNanos());
    long settledMs = driver.nowMs();
    // A few seconds of samples after the end, so the chart shows the drained backlog.
    awaitSample(settledMs + 1_500);
    sampler.interrupt();
    sampler.join(15_000);
    out.printf(Locale.ROOT, "[chaos] %s %.1f s after the last fault (%.1f s after the load)%n",
        settled ? "settled" : "did NOT settle", (settledMs - settleStartMs) / 1000.0,
        (settledMs - loadEndMs) / 1000.0);

    for (DemoInstance d : instances) {
      d.kill();
    }
    History h = snapshot(driver);
    Checker.Verdict v = Checker.check(h, o.recoveryBound().toMillis());
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("runId", runId);
    // The command that replays this run: the options that differ from their defaults.
    meta.put("command", replayCommand(o));
    meta.put("options", optionsMap());
    meta.put("settled", settled);
    meta.put("loadMs", loadEndMs);
    meta.put("faultsDoneMs", settleStartMs);
    meta.put("settleMs", settledMs - settleStartMs);
    meta.put("fatal", fatal);
    meta.put("schedule", schedule);
    Report.write(o.reportDir(), meta, h, v);
    print(v, settled);
    int code = v.passed() && fatal == null ? 0 : 1;
    return new Result(code, v, o.reportDir(), fatal);
  }

  /** {@code ./relaykit chaos} and the options that make {@code o}'s run (see replayArgs). */
  static String replayCommand(ChaosOptions o) {
    List<String> args = o.replayArgs();
    return args.isEmpty() ? "./relaykit chaos" : "./relaykit chaos " + String.join(" ", args);
  }

  private Map<String, Object> optionsMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("storage", o.storage());
    m.put("transport", o.transport());
    m.put("idempotency", o.idempotency());
    m.put("instances", o.instances());
    m.put("orders", o.orders());
    m.put("rate", o.rate());
    m.put("failRate", o.failRate());
    m.put("faults", new java.util.TreeSet<>(o.faults()));
    m.put("kills", o.kills());
    m.put("brokerKills", o.brokerKills());
    m.put("partitions", o.partitions());
    m.put("partitionSeconds", o.partitionLength().toSeconds());
    m.put("partitionModes", o.partitionModes());
    m.put("partitionTargets", o.partitionTargets());
    m.put("seed", o.seed());
    m.put("settleSeconds", o.settle().toSeconds());
    m.put("recoveryBoundSeconds", o.recoveryBound().toSeconds());
    m.put("repeatShare", o.repeatShare());
    m.put("poisonShare", o.poisonShare());
    m.put("poisonSku", ChaosOptions.POISON_SKU);
    return m;
  }

  private void print(Checker.Verdict v, boolean settled) {
    out.printf(Locale.ROOT, "[chaos] accepted %d, terminal %d (success %d, failed %d, of which"
        + " not poison %d), unacknowledged %d%n", v.acceptedKeys(), v.terminal(), v.success(),
        v.failed(), v.failedNotPoison(), v.unacknowledgedOrders());
    out.printf(Locale.ROOT, "[chaos] lost %d, duplicate effects %d, order violations %d, key"
        + " violations %d, dead letters without FAILED %d, FAILED without dead letter %d,"
        + " effects without dedupe row %d, faults not recovered within %d s %d%n", v.lost(),
        v.duplicateEffects(),
        v.orderViolations(), v.keyViolations(), v.deadLettersWithoutFailedOrder(),
        v.failedOrdersWithoutDeadLetter(), v.effectsWithoutDedupeRow(),
        o.recoveryBound().toSeconds(), v.unrecoveredFaults());
    out.printf(Locale.ROOT, "[chaos] max backlog %d, max oldest pending %d ms%n",
        v.maxBacklog(), v.maxOldestPendingMs());
    for (Checker.Recovery r : v.recoveries()) {
      out.printf(Locale.ROOT, "[chaos]   %s %s at %.1f s: %s%n", r.fault(), r.target(),
          r.startMs() / 1000.0, r.unrecovered() ? "NOT recovered within " + r.recoveryMs()
              + " ms" : "recovered in " + r.recoveryMs() + " ms");
    }
    v.examples().forEach((k, list) -> {
      if (!k.equals("failedNotPoison") || !list.isEmpty()) {
        out.println("[chaos]   " + k + ": " + list.subList(0, Math.min(5, list.size())));
      }
    });
    if (fatal != null) {
      out.println("[chaos] the fault schedule stopped: " + fatal);
    }
    out.println("[chaos] report: " + o.reportDir().toAbsolutePath().resolve("report.html"));
    out.println("[chaos] replay: " + replayCommand(o));
    out.println("[chaos] verdict: " + (v.passed() && fatal == null ? "PASS" : "FAIL")
        + (settled ? "" : " (the backlog did not drain within --settle)"));
  }

  private static Thread daemon(String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  private void injectAll(List<FaultSchedule.Event> schedule, long loadStart) {
    FaultPacer.Clock clock = new FaultPacer.Clock() {
      @Override
      public long nowMs() {
        return (System.nanoTime() - loadStart) / 1_000_000;
      }

      @Override
      public void sleepUntilMs(long atMs) throws InterruptedException {
        for (long left; (left = atMs - nowMs()) > 0; ) {
          LockSupport.parkNanos(left * 1_000_000L);
          if (Thread.interrupted()) {
            throw new InterruptedException();
          }
        }
      }
    };
    FaultPacer pacer = new FaultPacer(o.recoveryBound().toMillis(), HEALTHY_GAP.toMillis(), 250,
        clock, () -> {
          synchronized (samples) {
            return new ArrayList<>(samples);
          }
        }, line -> out.println("[chaos] " + line));
    FaultPacer.Outcome outcome = pacer.run(schedule, e -> faults.get(e.fault()).inject(e),
        windows::add);
    if (outcome.fatal() != null) {
      fatal = outcome.fatal();
    }
  }

  /**
   * Once a second, asks an instance that is up for /metrics through a {@link MetricsSampler},
   * without waiting for the answer: on a loaded machine an answer can take seconds, and the
   * cadence must not stretch with it. A sample is stamped when its answer arrives; an instance
   * has one request in flight; an ask unanswered within 5 s is a -1 sample.
   */
  private void sample(LoadDriver driver) {
    MetricsSampler sampler = new MetricsSampler(driver::nowMs, driver::accepted, 5_000,
        this::askMetrics, samples);
    long next = System.nanoTime();
    while (!Thread.currentThread().isInterrupted()) {
      List<Integer> up = new ArrayList<>();
      for (int i = 0; i < instances.size(); i++) {
        if (instances.get(i).up()) {
          up.add(i);
        }
      }
      sampler.tick(up);
      next += 1_000_000_000L;
      for (long left; (left = next - System.nanoTime()) > 0; ) {
        LockSupport.parkNanos(left);
        if (Thread.currentThread().isInterrupted()) {
          return;
        }
      }
    }
  }

  /** One GET /metrics to {@code instance}; anything but a 200 with JSON reads as no answer. */
  private CompletableFuture<MetricsSampler.Reading> askMetrics(int instance) {
    return http.sendAsync(HttpRequest.newBuilder(instances.get(instance).base()
            .resolve("/metrics")).timeout(Duration.ofSeconds(5)).GET().build(),
        HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
          if (r.statusCode() != 200) {
            return MetricsSampler.Reading.NONE;
          }
          try {
            JsonNode m = JSON.readTree(r.body());
            return new MetricsSampler.Reading(m.path("ordersSucceeded").asLong(-1),
                m.path("outboxBacklog").asLong(-1), m.path("oldestPendingAgeMs").asLong(-1));
          } catch (IOException bad) {
            return MetricsSampler.Reading.NONE;
          }
        });
  }

  private void awaitSample(long atMs) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      synchronized (samples) {
        if (!samples.isEmpty() && samples.get(samples.size() - 1).atMs() >= atMs) {
          return;
        }
      }
      LockSupport.parkNanos(100_000_000L);
    }
  }

  /**
   * Checks each service the run needs, makes a proxy in front of it and answers the demo's
   * environment pointing at the proxies.
   */
  private Map<String, String> prepareServices() throws Unavailable {
    Map<String, String> env = new LinkedHashMap<>();
    if (o.storage().equals("postgres")) {
      Matcher m = PG_URL.matcher(o.postgresUrl());
      if (!m.matches()) {
        throw new Unavailable("--postgres-url must look like"
            + " jdbc:postgresql://HOST:PORT/DB?user=..., was " + o.postgresUrl());
      }
      String host = m.group(1);
      int port = m.group(2) == null ? 5432 : Integer.parseInt(m.group(2));
      schema = "chaos_" + runId;
      try (Connection c = DriverManager.getConnection(o.postgresUrl());
          Statement s = c.createStatement()) {
        s.execute("CREATE SCHEMA " + schema);
      } catch (SQLException e) {
        schema = null;
        throw new Unavailable("PostgreSQL is not reachable at " + host + ":" + port + " ("
            + e.getMessage() + "); start it with `. scripts/services.sh && ensure_postgres`"
            + " (or ./relaykit test), or point --postgres-url / RELAYKIT_POSTGRES_URL at one");
      }
      FaultProxy p = FaultProxy.to(host, port);
      proxies.put("db", p);
      String params = m.group(4) == null ? "?" : m.group(4) + "&";
      env.put("RELAYKIT_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:" + p.port() + "/"
          + m.group(3) + params + "currentSchema=" + schema
          + "&socketTimeout=10&connectTimeout=5&tcpKeepAlive=true");
    }
    if (o.idempotency().equals("redis")) {
      URI uri = URI.create(envOr("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379"));
      int port = uri.getPort() < 0 ? 6379 : uri.getPort();
      reachable("Redis", uri.getHost(), port, "ensure_redis", "RELAYKIT_REDIS_URI");
      FaultProxy p = FaultProxy.to(uri.getHost(), port);
      proxies.put("redis", p);
      env.put("RELAYKIT_REDIS_URI", uri.getScheme() + "://"
          + (uri.getRawUserInfo() == null ? "" : uri.getRawUserInfo() + "@") + "127.0.0.1:"
          + p.port() + (uri.getRawPath() == null ? "" : uri.getRawPath()));
    }
    if (o.transport().equals("rabbitmq")) {
      URI uri = URI.create(envOr("RELAYKIT_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672"));
      int port = uri.getPort() < 0 ? 5672 : uri.getPort();
      reachable("RabbitMQ", uri.getHost(), port, "ensure_rabbitmq", "RELAYKIT_RABBITMQ_URI");
      FaultProxy p = FaultProxy.to(uri.getHost(), port);
      proxies.put("rabbitmq", p);
      env.put("RELAYKIT_RABBITMQ_URI", uri.getScheme() + "://"
          + (uri.getRawUserInfo() == null ? "" : uri.getRawUserInfo() + "@") + "127.0.0.1:"
          + p.port() + (uri.getRawPath() == null ? "" : uri.getRawPath()));
    }
    if (o.transport().equals("kafka")) {
      String servers = System.getenv("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS");
      if (!blank(servers)) {
        String first = servers.split(",")[0].trim();
        int colon = first.lastIndexOf(':');
        reachable("Kafka", first.substring(0, colon),
            Integer.parseInt(first.substring(colon + 1)), null,
            "RELAYKIT_KAFKA_BOOTSTRAP_SERVERS");
        env.put("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS", servers);
      } else {
        // A broker of the run's own, behind a proxy whose port it advertises: clients bootstrap
        // through the proxy and reconnect through it, so the proxy can partition them.
        int listen = LocalKafkaBroker.freePort();
        FaultProxy p = FaultProxy.to("127.0.0.1", listen);
        proxies.put("kafka", p);
        out.println("[chaos] starting a Kafka broker on 127.0.0.1:" + listen + " (clients through "
            + p.address() + "; log " + scratch.resolve("kafka").resolve("broker.log") + ")");
        try {
          broker = LocalKafkaBroker.start(scratch.resolve("kafka"), listen, p.port());
        } catch (IllegalStateException e) {
          throw new Unavailable("the run's Kafka broker did not start: " + e.getMessage());
        }
        env.put("RELAYKIT_KAFKA_BOOTSTRAP_SERVERS", broker.bootstrap());
      }
    }
    if (o.faults().contains("clock") && Faketime.library().isEmpty()) {
      throw new Unavailable("the clock fault needs libfaketime: install it with"
          + " `. scripts/services.sh && ensure_faketime` (apt-get install faketime)");
    }
    return env;
  }

  private static String envOr(String name, String fallback) {
    String v = System.getenv(name);
    return blank(v) ? fallback : v;
  }

  private static void reachable(String name, String host, int port, String ensure, String var)
      throws Unavailable {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 3_000);
    } catch (IOException e) {
      throw new Unavailable(name + " is not reachable at " + host + ":" + port + "; start it"
          + (ensure == null ? "" : " with `. scripts/services.sh && " + ensure + "`")
          + ", or point " + var + " at a running one");
    }
  }

  /** Reads what the database holds, after every instance was killed. */
  private History snapshot(LoadDriver driver) throws SQLException {
    String url = o.storage().equals("postgres")
        ? o.postgresUrl() + (o.postgresUrl().contains("?") ? "&" : "?") + "currentSchema=" + schema
        : "jdbc:h2:file:" + scratch.resolve("data").resolve("relaykit").toAbsolutePath()
            // The demo's own options (FILE_LOCK=SOCKET: no wait on the lock the kill left).
            + ";AUTO_SERVER=TRUE;FILE_LOCK=SOCKET";
    List<DbOrder> orders = new ArrayList<>();
    List<DbEffect> effects = new ArrayList<>();
    List<DbDeadLetter> dead = new ArrayList<>();
    Set<String> done = new HashSet<>();
    long unsent;
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT id, idem_key, sku FROM demo_orders")) {
        while (rs.next()) {
          orders.add(new DbOrder(rs.getString(1), rs.getString(2), rs.getString(3)));
        }
      }
      try (ResultSet rs = s.executeQuery(
          "SELECT order_id, effect, COUNT(*) FROM demo_effects GROUP BY order_id, effect")) {
        while (rs.next()) {
          effects.add(new DbEffect(rs.getString(1), rs.getString(2), rs.getInt(3)));
        }
      }
      try (ResultSet rs = s.executeQuery(
          "SELECT id, message_id, msg_key, consumer_group FROM relaykit_dead_letter")) {
        while (rs.next()) {
          dead.add(new DbDeadLetter(rs.getString(1), rs.getString(2), rs.getString(3),
              rs.getString(4)));
        }
      }
      try (ResultSet rs = s.executeQuery(
          "SELECT idem_key FROM relaykit_idempotency WHERE status = 1")) {
        while (rs.next()) {
          done.add(rs.getString(1));
        }
      }
      try (ResultSet rs = s.executeQuery(
          "SELECT COUNT(*) FROM relaykit_outbox WHERE state = 0")) {
        rs.next();
        unsent = rs.getLong(1);
      }
    }
    List<Sample> sampled;
    synchronized (samples) {
      sampled = new ArrayList<>(samples);
    }
    sampled.sort(Comparator.comparingLong(Sample::atMs));
    List<FaultWindow> w;
    synchronized (windows) {
      w = new ArrayList<>(windows);
    }
    w.sort(Comparator.comparingLong(FaultWindow::startMs));
    List<History.Request> requests;
    synchronized (driver.requests) {
      requests = new ArrayList<>(driver.requests);
    }
    List<History.StatusSeen> statuses;
    synchronized (driver.statuses) {
      statuses = new ArrayList<>(driver.statuses);
    }
    return new History(requests, statuses, orders, effects, dead, done, unsent, sampled, w,
        ChaosOptions.POISON_SKU);
  }

  @Override
  public void close() {
    cleanUp();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is shutting down: the hook runs (or ran) cleanUp itself
    }
  }

  /** Kills every instance, closes the proxies, drops the schema, deletes the scratch folder. */
  private void cleanUp() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    for (DemoInstance d : instances) {
      d.close();
    }
    LocalKafkaBroker b = broker;
    if (b != null) {
      try {
        b.close();
      } catch (RuntimeException e) {
        System.err.println("relaykit chaos: could not stop the Kafka broker: " + e);
      }
    }
    for (FaultProxy p : proxies.values()) {
      p.close();
    }
    String namespace = "chaos-" + runId;
    if (proxies.containsKey("redis")) {
      SharedCleanup.redis(envOr("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379"),
          "relaykit-demo:" + namespace + ":");
    }
    if (proxies.containsKey("rabbitmq")) {
      SharedCleanup.rabbitmq(envOr("RELAYKIT_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672"),
          namespace + ".", List.of("100ms", "1000ms"));
    }
    if (schema != null) {
      try (Connection c = DriverManager.getConnection(o.postgresUrl());
          Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      } catch (SQLException e) {
        System.err.println("relaykit chaos: could not drop schema " + schema + ": " + e);
      }
    }
    if (scratch != null) {
      try (Stream<Path> walk = Files.walk(scratch)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        System.err.println("relaykit chaos: could not delete " + scratch + ": " + e);
      }
    }
  }
}

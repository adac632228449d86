package io.relaykit.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.transport.kafka.KafkaTestBroker;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;

/**
 * Commit-to-handler latency at a fixed offered rate: how long a message appended to the outbox in
 * one transaction takes to reach a subscriber's handler through the relay (with its defaults) and
 * the transport. Not a JMH benchmark (JMH times method calls; an open-loop latency run is one long
 * schedule), but selected, listed and reported like one, so {@code ./relaykit bench} runs it after
 * the JMH suite and its report fails the command for a row that threw.
 *
 * <p>Each row ({@link LatencyRun}) sends by the clock: message {@code i} is due at {@code start + i
 * / rate}, and a pool of sender threads each commits one transaction ({@code append} + {@code
 * commit}) per message at its due time. Latency runs from the due time to the first handler call
 * for the message, so a sender, relay or consumer that falls behind is charged for every message
 * it delays, not only the one it was busy with (no coordinated omission). Percentiles come from an
 * HdrHistogram (3 significant digits) over the measured messages; the first {@code --warmup}
 * seconds of messages are sent the same way and not counted.
 *
 * <p>Rows, as JMH names would be ({@code io.relaykit.bench.LatencyBenchmark.<method>}) with params
 * {@code rate} (messages per second), {@code relays} and {@code wake} ({@link Wake}):
 * <ul>
 *   <li>{@code h2InProcess}: an H2 file database ({@code WRITE_DELAY=0}) and the in-process
 *       transport; one relay in this JVM.
 *   <li>{@code postgresKafka}: PostgreSQL at {@code RELAYKIT_POSTGRES_URL} (default {@value
 *       #POSTGRES_DEFAULT_URL}) and the in-JVM KRaft broker the transport's tests use ({@link
 *       KafkaTestBroker}), a 3-partition topic; {@code relays} 1: one relay in this JVM, 3: three
 *       child JVMs on this class path, each running one relay on the same outbox table.
 *   <li>{@code postgresRabbitMq}: PostgreSQL and RabbitMQ at {@code RELAYKIT_RABBITMQ_URI}
 *       (default {@code amqp://guest:guest@127.0.0.1:5672}); relays as above.
 * </ul>
 * The handler always runs in this JVM.
 *
 * <p>Usage: {@code java -cp benchmarks.jar io.relaykit.bench.LatencyBenchmark [--seconds S]
 * [--warmup S] [--json FILE] [--list] [--profile] [-- JMH args]}. The JMH args select rows as JMH
 * would:
 * include regexps matched against the full name, {@code -e} excludes, and {@code -p
 * rate=200,500}, {@code -p relays=1}, {@code -p wake=POLL} replace a param's values (a relay count
 * other than 1 does not apply to H2). Every other JMH option is accepted and ignored. {@code
 * --list} prints the selection in the format of JMH's {@code -lp}; {@code --profile} prints, after
 * each row with one relay, where its time went ({@link LatencyProfile}: claim, publish, confirm,
 * markSent and handler stages; the wrapping costs a little, so profiled figures are not the ones
 * to record). Exit status 0 when every
 * selected row produced a result, 1 when one threw (the run goes on to the next row), 2 on bad
 * usage.
 */
public final class LatencyBenchmark {

  static final String POSTGRES_DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
  static final String PACKAGE = "io.relaykit.bench.LatencyBenchmark.";
  static final List<Integer> DEFAULT_RATES = List.of(200, 2_000);

  /** Storage and transport of a row; {@code method} is the name the row is selected by. */
  public enum Backend {
    H2_INPROCESS("h2InProcess", "H2 file → in-process", List.of(1)),
    POSTGRES_KAFKA("postgresKafka", "PostgreSQL → Kafka", List.of(1, 3)),
    POSTGRES_RABBITMQ("postgresRabbitMq", "PostgreSQL → RabbitMQ", List.of(1, 3));

    final String method;
    final String label;
    /** Relay counts the row runs with by default. */
    final List<Integer> defaultRelays;

    Backend(String method, String label, List<Integer> defaultRelays) {
      this.method = method;
      this.label = label;
      this.defaultRelays = defaultRelays;
    }

    /** Whether relays in other JVMs can share this backend's outbox (not an H2 file). */
    boolean sharesAcrossJvms() {
      return this != H2_INPROCESS;
    }

    /** The backend selected by {@code Class.method} or the full name; null for none. */
    static Backend ofBenchmark(String name) {
      String method = name.substring(name.lastIndexOf('.') + 1);
      for (Backend b : values()) {
        if (b.method.equals(method)) {
          return b;
        }
      }
      return null;
    }
  }

  /**
   * How a relay learns that a transaction appended rows: {@link #POLL}, the baseline, turns every
   * wake off (the relay claims when its loop comes round: at once while it finds work, after its
   * idle poll interval, 200 ms by default, when it does not); {@link #WAKE} is relaykit's default
   * (the sender calls {@link OutboxStore#committed()} after its commit, which wakes relays of this
   * JVM, and on PostgreSQL the appending transaction sends a coalesced NOTIFY that wakes relays of
   * other processes).
   *
   * <p>{@link #storage}, {@link #outbox} and {@link #relay} are applied in this JVM and in every
   * child JVM that runs a relay (the constant's name is passed to the child), {@link #afterCommit}
   * by each sender thread right after its commit returned, with the senders' outbox store.
   */
  public enum Wake {
    /** No wake: the relay's own poll finds the row (NOTIFY off, no in-JVM wakeup). */
    POLL {
      @Override
      JdbcStorageConfig.Builder storage(JdbcStorageConfig.Builder builder) {
        return builder.outboxNotifications(false);
      }

      @Override
      OutboxRelay.Builder relay(OutboxRelay.Builder builder) {
        return builder.wakeup(null);
      }
    },
    /** relaykit's defaults: an in-JVM wake after each commit, NOTIFY across processes. */
    WAKE {
      @Override
      void afterCommit(OutboxStore outbox) {
        outbox.committed();
      }
    };

    /** Configures the storage of senders and relays. */
    JdbcStorageConfig.Builder storage(JdbcStorageConfig.Builder builder) {
      return builder;
    }

    /** The outbox store the senders append to and the relays claim from. */
    JdbcOutboxStore outbox(JdbcStorage storage) {
      return storage.outboxStore();
    }

    /** Configures each relay. */
    OutboxRelay.Builder relay(OutboxRelay.Builder builder) {
      return builder;
    }

    /**
     * Called by a sender after its append's transaction committed.
     *
     * @param outbox the store the sender appended through
     */
    void afterCommit(OutboxStore outbox) {
      // Polling: nothing to signal.
    }
  }

  /** One row: backend, offered rate (messages per second), relays, wake. */
  record Row(Backend backend, int rate, int relays, Wake wake) {
    Row {
      if (rate <= 0) {
        throw new IllegalArgumentException("rate must be positive, was " + rate);
      }
      if (relays < 1 || (relays > 1 && !backend.sharesAcrossJvms())) {
        throw new IllegalArgumentException(backend.method + " runs with 1 relay"
            + (backend.sharesAcrossJvms() ? " or more" : " only") + ", not " + relays);
      }
    }

    String benchmark() {
      return PACKAGE + backend.method;
    }

    Map<String, String> params() {
      Map<String, String> p = new LinkedHashMap<>();
      p.put("rate", Integer.toString(rate));
      p.put("relays", Integer.toString(relays));
      p.put("wake", wake.name());
      return p;
    }

    @Override
    public String toString() {
      return "LatencyBenchmark." + backend.method + " " + params();
    }
  }

  /**
   * What one row measured, in milliseconds from each message's due time.
   *
   * @param row the row
   * @param messages measured messages (all of them reached the handler)
   * @param p50 median latency
   * @param p99 99th percentile
   * @param p999 99.9th percentile
   * @param max the largest
   * @param commitP99 99th percentile of due time to commit returned (the senders' own lag)
   * @param duplicates handler calls beyond the first for a message (at-least-once repeats)
   */
  record Result(Row row, long messages, double p50, double p99, double p999, double max,
      double commitP99, long duplicates) {}

  private LatencyBenchmark() {}

  /**
   * Runs or lists the selected rows; see the class comment.
   *
   * @param args options, then {@code --} and JMH args
   * @throws IOException if the JSON file cannot be written
   */
  public static void main(String[] args) throws IOException {
    double seconds = 30;
    double warmup = 5;
    Path json = null;
    boolean list = false;
    boolean profile = false;
    int i = 0;
    try {
      for (; i < args.length && !args[i].equals("--"); i++) {
        switch (args[i]) {
          case "--seconds" -> seconds = positive("--seconds", args[++i]);
          case "--warmup" -> warmup = Double.parseDouble(args[++i]);
          case "--json" -> json = Path.of(args[++i]);
          case "--list" -> list = true;
          case "--profile" -> profile = true;
          default -> throw new IllegalArgumentException("unknown option " + args[i]);
        }
      }
    } catch (RuntimeException e) {
      System.err.println("LatencyBenchmark: " + e.getMessage()
          + "\nusage: LatencyBenchmark [--seconds S] [--warmup S] [--json FILE] [--list]"
          + " [--profile] [-- JMH args]");
      System.exit(2);
      return;
    }
    String[] jmhArgs = i < args.length ? Arrays.copyOfRange(args, i + 1, args.length)
        : new String[0];
    List<Row> rows;
    try {
      rows = select(jmhArgs);
    } catch (IllegalArgumentException e) {
      System.err.println("LatencyBenchmark: " + e.getMessage());
      System.exit(2);
      return;
    }
    if (list) {
      System.out.print(listing(rows));
      return;
    }
    List<Result> results = new ArrayList<>();
    List<String> failed = new ArrayList<>();
    for (Row row : rows) {
      System.out.println("# latency: " + row + ", " + warmup + " s warm-up + " + seconds + " s");
      try {
        Result r = LatencyRun.run(row, Duration.ofMillis(Math.round(warmup * 1000)),
            Duration.ofMillis(Math.round(seconds * 1000)), profile, System.out);
        System.out.println("  " + summary(r));
        results.add(r);
      } catch (Exception | AssertionError e) {
        System.out.println("  FAILED: " + e);
        e.printStackTrace(System.out);
        failed.add(row.toString());
      }
      if (json != null) {
        // After every row, so an interrupted run keeps what it measured.
        Files.writeString(json, json(results), StandardCharsets.UTF_8);
      }
    }
    KafkaTestBroker.stop();
    if (!failed.isEmpty()) {
      System.err.println("latency rows that threw: " + failed);
      System.exit(1);
    }
  }

  private static double positive(String name, String value) {
    double v = Double.parseDouble(value);
    if (!(v > 0)) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
    return v;
  }

  /**
   * The rows JMH args select: include regexps (none: all) matched anywhere in the full name,
   * {@code -e} excludes, {@code -p} values for {@code rate}, {@code relays} and {@code wake}.
   *
   * @throws IllegalArgumentException naming a bad argument or param value
   */
  static List<Row> select(String... jmhArgs) {
    CommandLineOptions options;
    try {
      options = new CommandLineOptions(jmhArgs);
    } catch (CommandLineOptionException e) {
      throw new IllegalArgumentException("bad JMH arguments: " + e.getMessage(), e);
    }
    List<Integer> rates = ints("rate", options.getParameter("rate").orElse(null), DEFAULT_RATES);
    Collection<String> relayValues = options.getParameter("relays").orElse(null);
    List<Wake> wakes = new ArrayList<>();
    Collection<String> wakeValues = options.getParameter("wake").orElse(null);
    if (wakeValues == null) {
      wakes.add(Wake.POLL);
      wakes.add(Wake.WAKE);
    } else {
      for (String w : wakeValues) {
        try {
          wakes.add(Wake.valueOf(w.trim()));
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("wake=" + w + " is not one of "
              + Arrays.toString(Wake.values()), e);
        }
      }
    }
    List<Row> rows = new ArrayList<>();
    for (Backend backend : Backend.values()) {
      String name = PACKAGE + backend.method;
      if (!matches(options.getIncludes(), name, true) || matches(options.getExcludes(), name,
          false)) {
        continue;
      }
      List<Integer> relays = ints("relays", relayValues, backend.defaultRelays);
      for (int rate : rates) {
        for (int r : relays) {
          if (r > 1 && !backend.sharesAcrossJvms()) {
            continue;
          }
          for (Wake wake : wakes) {
            rows.add(new Row(backend, rate, r, wake));
          }
        }
      }
    }
    return rows;
  }

  private static boolean matches(List<String> patterns, String name, boolean whenEmpty) {
    if (patterns.isEmpty()) {
      return whenEmpty;
    }
    for (String p : patterns) {
      if (Pattern.compile(p).matcher(name).find()) {
        return true;
      }
    }
    return false;
  }

  private static List<Integer> ints(String param, Collection<String> values,
      List<Integer> defaults) {
    if (values == null) {
      return defaults;
    }
    List<Integer> out = new ArrayList<>();
    for (String v : values) {
      try {
        int n = Integer.parseInt(v.trim());
        if (n <= 0) {
          throw new NumberFormatException("not positive");
        }
        out.add(n);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(param + "=" + v + " is not a positive integer", e);
      }
    }
    return out;
  }

  /**
   * The rows in the format of JMH's {@code -lp}: each backend's full name, then each param with
   * the values the run uses (the rows of one backend are every combination of them).
   */
  static String listing(List<Row> rows) {
    Map<String, Map<String, List<String>>> byBenchmark = new LinkedHashMap<>();
    for (Row row : rows) {
      Map<String, List<String>> params =
          byBenchmark.computeIfAbsent(row.benchmark(), k -> new LinkedHashMap<>());
      for (Map.Entry<String, String> p : row.params().entrySet()) {
        List<String> values = params.computeIfAbsent(p.getKey(), k -> new ArrayList<>());
        if (!values.contains(p.getValue())) {
          values.add(p.getValue());
        }
      }
    }
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, Map<String, List<String>>> b : byBenchmark.entrySet()) {
      out.append(b.getKey()).append('\n');
      for (Map.Entry<String, List<String>> p : b.getValue().entrySet()) {
        out.append("  param \"").append(p.getKey()).append("\" = {")
            .append(String.join(", ", p.getValue())).append("}\n");
      }
    }
    return out.toString();
  }

  /** The results as JMH's JSON result format, which {@link Report#read} reads. */
  static String json(List<Result> results) {
    ObjectMapper mapper = new ObjectMapper();
    ArrayNode root = mapper.createArrayNode();
    for (Result r : results) {
      ObjectNode node = root.addObject();
      node.put("benchmark", r.row().benchmark());
      node.put("mode", "latency");
      ObjectNode params = node.putObject("params");
      r.row().params().forEach(params::put);
      ObjectNode primary = node.putObject("primaryMetric");
      primary.put("score", r.p99());
      primary.put("scoreUnit", "ms p99");
      ObjectNode secondary = node.putObject("secondaryMetrics");
      metric(secondary, "p50", r.p50(), "ms");
      metric(secondary, "p99", r.p99(), "ms");
      metric(secondary, "p99.9", r.p999(), "ms");
      metric(secondary, "max", r.max(), "ms");
      metric(secondary, "commit p99", r.commitP99(), "ms");
      metric(secondary, "messages", r.messages(), "messages");
      metric(secondary, "duplicates", r.duplicates(), "messages");
    }
    try {
      return mapper.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (IOException e) {
      throw new IllegalStateException("could not write the latency results as JSON", e);
    }
  }

  private static void metric(ObjectNode secondary, String name, double score, String unit) {
    ObjectNode m = secondary.putObject(name);
    m.put("score", score);
    m.put("scoreUnit", unit);
  }

  static String summary(Result r) {
    return String.format(Locale.ROOT, "%d messages: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms,"
        + " max %.1f ms (due → commit p99 %.1f ms; %d duplicates)", r.messages(), r.p50(),
        r.p99(), r.p999(), r.max(), r.commitP99(), r.duplicates());
  }

  /** Prints to {@code out}; a seam for the run's progress lines. */
  static void log(PrintStream out, String line) {
    if (out != null) {
      out.println("  " + line);
    }
  }
}

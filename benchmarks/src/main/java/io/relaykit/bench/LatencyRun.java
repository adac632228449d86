package io.relaykit.bench;

import io.relaykit.bench.LatencyBenchmark.Backend;
import io.relaykit.bench.LatencyBenchmark.Result;
import io.relaykit.bench.LatencyBenchmark.Row;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * One row of {@link LatencyBenchmark}: sets up storage, transport, subscriber and relays, primes
 * the path with one message, sends on the clock, waits for every message to reach the handler and
 * takes the percentiles; then removes everything it made (tables, topology, child JVMs, files).
 *
 * <p>Senders: {@link #senders(int)} threads share the schedule (each takes the next due message,
 * waits for its due time, then appends and commits it in its own transaction on a pooled
 * connection), as request threads of an application would; one slow commit does not hold back the
 * next due message unless every sender is busy, and then the delay is charged to the messages it
 * delays (the report shows it apart as "due → commit").
 */
final class LatencyRun implements AutoCloseable {

  /**
   * Sender threads for {@code rate}: enough that each may take 10 ms per transaction (a commit that
   * waits for the disk on a busy machine) and still keep up, 8 to 32.
   */
  static int senders(int rate) {
    return Math.min(32, Math.max(8, (rate + 99) / 100));
  }
  static final String GROUP = "latency";
  /** How long the path may take to deliver the priming message (group join, child JVMs). */
  private static final long READY_SECONDS = 120;
  /** How long after the last due time every message must have reached the handler. */
  private static final long DRAIN_SECONDS = 60;

  private final Row row;
  private final PrintStream log;
  private final String runId = UUID.randomUUID().toString().substring(0, 8);
  private final String idPrefix = "m-" + runId + "-";
  private final String probeId = "probe-" + runId;
  private final int warmupCount;
  private final int total;
  private final long[] due;
  private final long[] committed;
  private final AtomicLongArray handled;
  private final AtomicInteger delivered = new AtomicInteger();
  private final AtomicLong duplicates = new AtomicLong();
  private final CountDownLatch probe = new CountDownLatch(1);
  private final CountDownLatch done = new CountDownLatch(1);
  /** What to close, last opened first. */
  private final Deque<AutoCloseable> closers = new ArrayDeque<>();

  private String jdbcUrl;
  private String destination;
  private String kafkaBootstrap;
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;
  private OutboxRelay relay;
  private InProcessTransport inProcess;
  /** Null unless profiling a row whose relay runs in this JVM. */
  private final LatencyProfile profile;

  private LatencyRun(Row row, Duration warmup, Duration measure, boolean profile,
      PrintStream log) {
    this.row = row;
    this.log = log;
    this.warmupCount = (int) Math.round(row.rate() * warmup.toNanos() / 1e9);
    long measured = Math.max(1, Math.round(row.rate() * measure.toNanos() / 1e9));
    if (warmupCount + measured > 50_000_000) {
      throw new IllegalArgumentException("rate × duration is over 50 million messages: " + row
          + ", " + warmup + " + " + measure);
    }
    this.total = (int) (warmupCount + measured);
    this.due = new long[total];
    this.committed = new long[total];
    this.handled = new AtomicLongArray(total);
    this.profile = profile && row.relays() == 1 ? new LatencyProfile(total, this::indexOf) : null;
    if (profile && this.profile == null) {
      LatencyBenchmark.log(log, "--profile times a relay in this JVM only; not profiling " + row);
    }
  }

  /** A message id's index in the schedule; -1 for the probe or another run's message. */
  private int indexOf(String id) {
    return id.startsWith(idPrefix)
        ? Integer.parseInt(id, idPrefix.length(), id.length(), 10) : -1;
  }

  /**
   * Runs {@code row}: {@code warmup} of messages not counted, then {@code measure} of messages
   * counted, all at the row's rate.
   *
   * @throws Exception naming what failed: a service not reachable, a sender's commit, messages
   *     that did not reach the handler in time
   */
  static Result run(Row row, Duration warmup, Duration measure, PrintStream log)
      throws Exception {
    return run(row, warmup, measure, false, log);
  }

  /**
   * {@link #run(Row, Duration, Duration, PrintStream)}, and with {@code profile} (a row with one
   * relay) the {@link LatencyProfile} stage table printed to {@code log}.
   */
  static Result run(Row row, Duration warmup, Duration measure, boolean profile,
      PrintStream log) throws Exception {
    try (LatencyRun run = new LatencyRun(row, warmup, measure, profile, log)) {
      run.open();
      return run.measure();
    }
  }

  private void open() throws Exception {
    long t0 = System.nanoTime();
    openStorage();
    Subscriber subscriber = openTransport();
    Subscription subscription = subscriber.subscribe(
        SubscriptionSpec.builder(destination, GROUP).build(), this::handle);
    closers.push(subscription);
    if (row.relays() == 1) {
      Publisher publisher = relayPublisher();
      OutboxStore relayStore = outbox;
      if (profile != null) {
        publisher = profile.publisher(publisher);
        relayStore = profile.store(outbox);
      }
      relay = row.wake().relay(OutboxRelay.builder(relayStore, publisher,
          storage.deadLetterStore())).build();
      closers.push(relay);
      relay.start();
    } else {
      List<Child> children = new ArrayList<>();
      for (int n = 0; n < row.relays(); n++) {
        Child child = Child.start(childArgs());
        children.add(child);
        closers.push(child);
      }
      for (Child child : children) {
        child.awaitReady(READY_SECONDS);
      }
    }
    append(Message.builder().id(probeId).type("latency.probe")
        .payload(JournalBenchmark.PAYLOAD).build());
    if (!probe.await(READY_SECONDS, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the priming message did not reach the handler in "
          + READY_SECONDS + " s: " + row);
    }
    LatencyBenchmark.log(log, String.format(java.util.Locale.ROOT,
        "set up and primed in %.1f s; sending %d messages (%d warm-up) at %d/s with %d senders",
        (System.nanoTime() - t0) / 1e9, total, warmupCount, row.rate(), senders(row.rate())));
  }

  private void openStorage() throws IOException {
    Path dir = null;
    if (row.backend() == Backend.H2_INPROCESS) {
      Path d = BenchDirs.create("h2-latency");
      dir = d;
      closers.push(() -> BenchDirs.delete(d));
      jdbcUrl = "jdbc:h2:file:" + d.toAbsolutePath().resolve("db");
    } else {
      String env = System.getenv("RELAYKIT_POSTGRES_URL");
      jdbcUrl = env == null || env.isBlank() ? LatencyBenchmark.POSTGRES_DEFAULT_URL : env;
    }
    JdbcStorageConfig.Builder config = JdbcStorageConfig.builder()
        .jdbcUrl(jdbcUrl)
        .tablePrefix("lat_" + runId + "_")
        // The senders' connections, and the relay's when it runs here.
        .poolSize(senders(row.rate()) + 4);
    try {
      storage = JdbcStorage.open(row.wake().storage(config).build(), InstantSource.system());
    } catch (RuntimeException e) {
      throw new IllegalStateException(dir != null ? "could not open the H2 file at " + jdbcUrl
          + " (" + e + ")" : "PostgreSQL is not reachable at " + jdbcUrl + " (" + e + "); start it"
          + " with ./relaykit test's services, or set RELAYKIT_POSTGRES_URL", e);
    }
    JdbcStorage s = storage;
    closers.push(s::close);
    if (row.backend() != Backend.H2_INPROCESS) {
      closers.push(() -> dropTables(s));
    }
    outbox = row.wake().outbox(storage);
  }

  /** The subscriber (closed at the end), and what relays need to publish to the destination. */
  private Subscriber openTransport() throws Exception {
    switch (row.backend()) {
      case H2_INPROCESS -> {
        destination = "latency-" + runId;
        InProcessTransport transport = InProcessTransport.create();
        closers.push(transport::close);
        inProcess = transport;
        return transport;
      }
      case POSTGRES_KAFKA -> {
        kafkaBootstrap = KafkaTestBroker.bootstrapServers();
        destination = KafkaTestBroker.uniqueTopic("latency");
        KafkaTestBroker.createTopic(destination, 3);
        KafkaSubscriber subscriber = KafkaSubscriber.create(kafkaConfig(kafkaBootstrap));
        closers.push(subscriber::close);
        return subscriber;
      }
      case POSTGRES_RABBITMQ -> {
        destination = "latency-" + runId;
        RabbitMqTransportConfig config = RabbitMqTransportConfig.builder().build();
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setUri(config.uri());
        com.rabbitmq.client.Connection admin;
        try {
          admin = factory.newConnection("relaykit-bench-latency-admin");
        } catch (IOException | TimeoutException e) {
          throw new IllegalStateException("RabbitMQ is not reachable (" + e + ", "
              + RabbitMqTransportConfig.URI_ENV + "): start it with `rabbitmq-server -detached`",
              e);
        }
        closers.push(admin::close);
        RabbitMqTopology topology = RabbitMqTopology.of(config);
        closers.push(() -> topology.delete(admin, destination, GROUP, true));
        RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config);
        closers.push(subscriber::close);
        return subscriber;
      }
      default -> throw new IllegalArgumentException("unknown backend " + row.backend());
    }
  }

  /** A publisher for the relay in this JVM, on the row's transport with its defaults. */
  private Publisher relayPublisher() {
    return switch (row.backend()) {
      case H2_INPROCESS -> inProcess;
      case POSTGRES_KAFKA -> closing(KafkaPublisher.create(kafkaConfig(kafkaBootstrap)));
      case POSTGRES_RABBITMQ -> closing(RabbitMqPublisher.create(
          RabbitMqTransportConfig.builder().build()));
    };
  }

  private Publisher closing(Publisher publisher) {
    closers.push(publisher::close);
    return publisher;
  }

  static KafkaTransportConfig kafkaConfig(String bootstrap) {
    return KafkaTransportConfig.builder().bootstrapServers(bootstrap).build();
  }

  private List<String> childArgs() {
    return List.of(row.backend().name(), jdbcUrl, storage.tablePrefix(), destination,
        row.wake().name(), kafkaBootstrap == null ? "-" : kafkaBootstrap);
  }

  private void handle(Delivery delivery) {
    long now = System.nanoTime();
    String id = delivery.message().id();
    if (id.startsWith(idPrefix)) {
      int i = Integer.parseInt(id, idPrefix.length(), id.length(), 10);
      if (handled.compareAndSet(i, 0, now)) {
        if (delivered.incrementAndGet() == total) {
          done.countDown();
        }
      } else {
        duplicates.incrementAndGet();
      }
    } else if (id.equals(probeId)) {
      probe.countDown();
    }
  }

  private void append(Message message) throws SQLException {
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.append(tx, destination, message);
      tx.commit();
    }
  }

  private Result measure() throws Exception {
    long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
    for (int i = 0; i < total; i++) {
      due[i] = start + Math.round(i * 1e9 / row.rate());
    }
    AtomicInteger next = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> senders = new ArrayList<>();
    for (int s = 0; s < senders(row.rate()); s++) {
      Thread t = new Thread(() -> send(next, stop, failure), "latency-sender-" + s);
      t.setDaemon(true);
      senders.add(t);
      t.start();
    }
    for (Thread t : senders) {
      t.join();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a sender's append failed: " + failure.get(),
          failure.get());
    }
    long wait = due[total - 1] + TimeUnit.SECONDS.toNanos(DRAIN_SECONDS) - System.nanoTime();
    if (!done.await(Math.max(0, wait), TimeUnit.NANOSECONDS)) {
      throw new IllegalStateException("only " + delivered.get() + " of " + total
          + " messages reached the handler within " + DRAIN_SECONDS
          + " s of the last one's due time (the path fell behind the offered rate, or lost"
          + " messages): " + row);
    }
    Histogram latency = new Histogram(3);
    Histogram commit = new Histogram(3);
    for (int i = warmupCount; i < total; i++) {
      latency.recordValue(Math.max(0, handled.get(i) - due[i]));
      commit.recordValue(Math.max(0, committed[i] - due[i]));
    }
    if (profile != null && log != null) {
      profile.print(log, warmupCount, due, committed, handled);
    }
    return new Result(row, total - warmupCount, ms(latency.getValueAtPercentile(50)),
        ms(latency.getValueAtPercentile(99)), ms(latency.getValueAtPercentile(99.9)),
        ms(latency.getMaxValue()), ms(commit.getValueAtPercentile(99)), duplicates.get());
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }

  /** One sender thread: takes the next due message until none is left or a sender failed. */
  private void send(AtomicInteger next, AtomicBoolean stop, AtomicReference<Throwable> failure) {
    byte[] payload = JournalBenchmark.PAYLOAD.getBytes(StandardCharsets.UTF_8);
    for (int i = next.getAndIncrement(); i < total && !stop.get(); i = next.getAndIncrement()) {
      for (long w = due[i] - System.nanoTime(); w > 0; w = due[i] - System.nanoTime()) {
        LockSupport.parkNanos(w);
      }
      try {
        append(Message.builder().id(idPrefix + i).type("latency.probe").payload(payload)
            .build());
        // Written before the senders are joined, read after: the join orders them.
        committed[i] = System.nanoTime();
        row.wake().afterCommit(outbox);
      } catch (Throwable e) {
        failure.compareAndSet(null, e);
        stop.set(true);
      }
    }
  }

  @Override
  public void close() {
    while (!closers.isEmpty()) {
      try {
        closers.pop().close();
      } catch (Exception e) {
        LatencyBenchmark.log(log, "cleanup: " + e);
      }
    }
  }

  private static void dropTables(JdbcStorage storage) throws SQLException {
    try (Connection c = storage.dataSource().getConnection();
        Statement s = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT table_name FROM information_schema.tables"
          + " WHERE table_schema = current_schema() AND starts_with(table_name, '"
          + storage.tablePrefix() + "')")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        s.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
      }
    }
  }

  /**
   * A child JVM running {@link LatencyRelayProcess} on this JVM's class path; it prints {@code
   * ready} once its relay runs, and stops when its standard input ends (closed here, or this JVM
   * died).
   */
  private static final class Child implements AutoCloseable {
    private final Process process;
    private final Path stderr;
    private final CompletableFuture<Void> ready = new CompletableFuture<>();

    private Child(Process process, Path stderr) {
      this.process = process;
      this.stderr = stderr;
    }

    static Child start(List<String> args) throws IOException {
      Path err = Files.createTempFile("relaykit-latency-relay", ".err");
      List<String> command = new ArrayList<>(List.of(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
          "-cp", System.getProperty("java.class.path"), LatencyRelayProcess.class.getName()));
      command.addAll(args);
      Process p = new ProcessBuilder(command).redirectError(err.toFile()).start();
      Child child = new Child(p, err);
      Thread reader = new Thread(child::readStdout, "latency-child-" + p.pid());
      reader.setDaemon(true);
      reader.start();
      return child;
    }

    private void readStdout() {
      try (BufferedReader out = new BufferedReader(new InputStreamReader(
          process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          if (line.equals(LatencyRelayProcess.READY)) {
            ready.complete(null);
          }
        }
      } catch (IOException e) {
        ready.completeExceptionally(e);
      }
      ready.completeExceptionally(new IllegalStateException("exited before it was ready"));
    }

    void awaitReady(long seconds) throws Exception {
      try {
        ready.get(seconds, TimeUnit.SECONDS);
      } catch (Exception e) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        throw new IllegalStateException("the relay JVM " + process.pid() + " did not start ("
            + e + "): " + Files.readString(stderr), e);
      }
    }

    @Override
    public void close() throws IOException {
      try {
        process.getOutputStream().close();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      } finally {
        Files.deleteIfExists(stderr);
      }
    }
  }
}

package io.relaykit.test;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Runs relaykit for each test: the in-process transport, an outbox (in memory or on a private H2
 * database), a dead-letter store, an idempotency store, an outbox relay publishing through the
 * recording {@link TestRelayKit}, all on one {@link FakeClock}. Everything is new for each test and
 * closed after it, so tests never see each other's messages.
 *
 * <pre>{@code
 * @RegisterExtension
 * final RelayKitExtension relaykit = RelayKitExtension.inMemory();
 *
 * @Test
 * void placingAnOrderSendsOneSms() {
 *   relaykit.subscribe(SubscriptionSpec.builder("orders", "sms")
 *       .retryPolicy(TestRelayKit.fastRetries(3)).build(), sms::send);
 *   orders.place(relaykit.outbox(), "order-42");          // your code appends
 *   relaykit.kit().awaitHandled("sms", "order-42", Duration.ofSeconds(5));
 *   assertThat(relaykit.kit().published("orders")).hasSize(1);
 * }
 * }</pre>
 *
 * <p>Register it on an instance field (or a static one: each test still gets a fresh instance).
 * A test method may also take the {@link TestRelayKit} as a parameter. The relay polls every 10 ms
 * in real time; the clock only moves when the test moves it, and so does everything relaykit
 * decides by time on it (message expiry, retry age limits, outbox retention); the in-process
 * transport's retry delays and the relay's polling run in real time. With {@link TestStorage#H2},
 * leases are decided on H2's clock, as in production.
 */
public final class RelayKitExtension implements BeforeEachCallback, AfterEachCallback,
    ParameterResolver {

  private final TestStorage storage;
  private final Instant start;
  private final boolean relayEnabled;
  private final Duration pollInterval;

  private Running running;

  private RelayKitExtension(Builder b) {
    this.storage = b.storage;
    this.start = b.start;
    this.relayEnabled = b.relay;
    this.pollInterval = b.pollInterval;
  }

  /**
   * In-memory storage, a running relay, the clock at {@link FakeClock#EPOCH}.
   *
   * @return the extension
   */
  public static RelayKitExtension inMemory() {
    return builder().build();
  }

  /**
   * H2 storage (a private in-memory database per test), a running relay.
   *
   * @return the extension
   */
  public static RelayKitExtension h2() {
    return builder().storage(TestStorage.H2).build();
  }

  /**
   * A builder: in-memory storage, a running relay, the clock at {@link FakeClock#EPOCH}.
   *
   * @return the builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The harness of the running test.
   *
   * @return the harness
   * @throws IllegalStateException outside a test (before each, after each)
   */
  public TestRelayKit kit() {
    return current().kit;
  }

  /**
   * The outbox (appends go here; the relay drains it).
   *
   * @return the outbox
   */
  public OutboxStore outbox() {
    return current().kit.outbox();
  }

  /**
   * The idempotency store, for {@code IdempotentHandler}s under test.
   *
   * @return the idempotency store
   */
  public IdempotencyStore idempotencyStore() {
    return current().idempotency;
  }

  /**
   * The dead-letter store.
   *
   * @return the dead-letter store
   */
  public DeadLetterStore deadLetterStore() {
    return current().kit.deadLetterStore();
  }

  /**
   * The clock; {@code clock().advance(d)} moves relaykit's time.
   *
   * @return the clock
   */
  public FakeClock clock() {
    return current().kit.clock();
  }

  /**
   * The H2 database of {@link TestStorage#H2}: your tables go here, and an append on one of its
   * connections commits or rolls back with your rows.
   *
   * @return the data source
   * @throws IllegalStateException with {@link TestStorage#MEMORY}, or outside a test
   */
  public DataSource dataSource() {
    Running r = current();
    if (r.jdbc == null) {
      throw new IllegalStateException("dataSource() needs TestStorage.H2; this extension runs on "
          + storage);
    }
    return r.jdbc.dataSource();
  }

  /**
   * The JDBC outbox of {@link TestStorage#H2}: {@code jdbcOutbox().append(connection, destination,
   * message)} writes in your transaction on a {@link #dataSource()} connection.
   *
   * @return the outbox store
   * @throws IllegalStateException with {@link TestStorage#MEMORY}, or outside a test
   */
  public JdbcOutboxStore jdbcOutbox() {
    Running r = current();
    if (r.jdbc == null) {
      throw new IllegalStateException("jdbcOutbox() needs TestStorage.H2; this extension runs on "
          + storage);
    }
    return (JdbcOutboxStore) r.kit.outbox();
  }

  /**
   * Subscribes through the recording subscriber ({@link TestRelayKit#subscribe}).
   *
   * @param spec the subscription
   * @param handler the handler
   * @return the subscription, closed after the test
   */
  public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    return current().kit.subscribe(spec, handler);
  }

  /**
   * Appends {@code message} to the outbox in a transaction of its own (for a test that does not
   * care about your transaction; your code's own append is what a test usually exercises).
   *
   * @param destination the destination
   * @param message the message
   * @throws IllegalStateException if the H2 append fails (the SQL error is its cause)
   */
  public void append(String destination, Message message) {
    Running r = current();
    if (r.jdbc == null) {
      ((InMemoryOutboxStore) r.kit.outbox()).append(destination, message);
      return;
    }
    try (Connection c = r.jdbc.dataSource().getConnection()) {
      c.setAutoCommit(false);
      ((JdbcOutboxStore) r.kit.outbox()).append(c, destination, message);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException("append to " + destination + " failed: " + e.getMessage(),
          e);
    }
  }

  /**
   * Runs the relay once now, on the test's thread (for a builder with {@code relay(false)}).
   *
   * @return what the pass did
   */
  public OutboxRelay.Batch relayOnce() {
    return current().relay.runOnce();
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    if (running != null) {
      running.close();
    }
    running = new Running();
  }

  @Override
  public void afterEach(ExtensionContext context) {
    Running r = running;
    running = null;
    if (r != null) {
      r.close();
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == TestRelayKit.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    return kit();
  }

  private Running current() {
    Running r = running;
    if (r == null) {
      throw new IllegalStateException("relaykit runs only during a test (register the extension"
          + " with @RegisterExtension and use it inside a test method)");
    }
    return r;
  }

  /** One test's relaykit. */
  private final class Running implements AutoCloseable {
    final FakeClock clock = new FakeClock(start);
    final JdbcStorage jdbc;
    final IdempotencyStore idempotency;
    final InProcessTransport transport;
    final TestRelayKit kit;
    final OutboxRelay relay;

    Running() {
      OutboxStore outbox;
      DeadLetterStore deadLetters;
      if (storage == TestStorage.H2) {
        jdbc = JdbcStorage.open(JdbcStorageConfig.builder()
            .jdbcUrl("jdbc:h2:mem:relaykit-test-" + UUID.randomUUID()
                + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000")
            .build(), clock);
        outbox = jdbc.outboxStore();
        deadLetters = jdbc.deadLetterStore();
        idempotency = jdbc.idempotencyStore();
      } else {
        jdbc = null;
        outbox = new InMemoryOutboxStore(clock);
        deadLetters = new InMemoryDeadLetterStore();
        idempotency = new InMemoryIdempotencyStore(clock, Duration.ofDays(1));
      }
      transport = InProcessTransport.builder().clock(clock).deadLetters(deadLetters).build();
      kit = TestRelayKit.of(transport, outbox, deadLetters, clock);
      relay = OutboxRelay.builder(outbox, kit.publisher(), deadLetters)
          .clock(clock)
          .pollInterval(pollInterval)
          .retryPolicy(TestRelayKit.fastRetries(3))
          .build();
      if (relayEnabled) {
        relay.start();
      }
    }

    @Override
    public void close() {
      try {
        relay.close(Duration.ofSeconds(5));
      } finally {
        try {
          transport.close();
        } finally {
          if (jdbc != null) {
            // DB_CLOSE_DELAY=-1 keeps the database until it is dropped: drop it with the pool.
            try (Connection c = jdbc.dataSource().getConnection();
                java.sql.Statement s = c.createStatement()) {
              s.execute("SHUTDOWN");
            } catch (SQLException e) {
              // Already closed; nothing left to free.
            } finally {
              jdbc.close();
            }
          }
        }
      }
    }
  }

  /** Options of a {@link RelayKitExtension}. */
  public static final class Builder {
    private TestStorage storage = TestStorage.MEMORY;
    private Instant start = FakeClock.EPOCH;
    private boolean relay = true;
    private Duration pollInterval = Duration.ofMillis(10);

    private Builder() {}

    /**
     * Where the stores live. Default {@link TestStorage#MEMORY}.
     *
     * @param storage the storage
     * @return this builder
     * @throws NullPointerException if {@code storage} is null
     */
    public Builder storage(TestStorage storage) {
      this.storage = Objects.requireNonNull(storage, "storage");
      return this;
    }

    /**
     * The clock's time when each test starts. Default {@link FakeClock#EPOCH}.
     *
     * @param start the instant
     * @return this builder
     * @throws NullPointerException if {@code start} is null
     */
    public Builder clockAt(Instant start) {
      this.start = Objects.requireNonNull(start, "start");
      return this;
    }

    /**
     * Whether the relay runs in the background (default) or only when the test calls {@link
     * RelayKitExtension#relayOnce()}.
     *
     * @param running true for a background relay
     * @return this builder
     */
    public Builder relay(boolean running) {
      this.relay = running;
      return this;
    }

    /**
     * How often the background relay polls the outbox. Default 10 ms.
     *
     * @param pollInterval 1 ms to 1 s
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder pollInterval(Duration pollInterval) {
      if (pollInterval == null || pollInterval.compareTo(Duration.ofMillis(1)) < 0
          || pollInterval.compareTo(Duration.ofSeconds(1)) > 0) {
        throw new IllegalArgumentException("pollInterval must be 1 ms to 1 s, was "
            + pollInterval);
      }
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * The extension.
     *
     * @return the extension
     */
    public RelayKitExtension build() {
      return new RelayKitExtension(this);
    }
  }
}

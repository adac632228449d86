package io.relaykit.spring.boot;

import io.relaykit.codec.Payloads;
import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Objects;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The outbox of a Spring application: {@link #append} writes a message in the caller's current
 * Spring transaction, so it commits or rolls back with the business rows written in the same
 * {@code @Transactional} method.
 *
 * <p>Guarantees: on the JDBC storage the row is inserted through the transaction's own connection
 * ({@link DataSourceUtils#getConnection}), and an append without a Spring transaction bound to
 * relaykit's DataSource throws {@link IllegalStateException} and writes nothing, never an
 * autocommitted row. On the in-memory storage the message is appended after the transaction
 * commits (a {@link TransactionSynchronization}) and dropped when it rolls back; it is lost if
 * the process dies between the commit and the append, as everything in memory is. A bounded
 * in-memory store that is full refuses the append inside the transaction (an {@link
 * io.relaykit.outbox.OutboxFullException} the caller's rollback rule sees); appends racing for
 * its last free place can still be refused after their commit, and such a message is logged at
 * ERROR, with its id, as lost.
 *
 * <p>Latency: once the transaction commits ({@code afterCommit}, never after a rollback) the
 * relays of this JVM on the same storage are woken at once ({@link JdbcOutboxStore#committed()}),
 * one wake per transaction however many rows it appended; relays of other processes on
 * PostgreSQL through the append's coalesced NOTIFY (see {@link
 * io.relaykit.storage.jdbc.JdbcStorage#outboxWakeup()}); the relays' poll stays the safety net.
 *
 * <p>Cost: one INSERT (and, for a keyed message, one lock of its key's head row) on the caller's
 * connection. Failures: an {@link SQLException} from the database is rethrown as {@link
 * JdbcOutboxException}, a runtime exception, so Spring's default rollback rule rolls the caller's
 * transaction back; an {@link io.relaykit.outbox.OutboxFullException} (bounded outbox) passes
 * through with nothing written.
 *
 * <p>Thread-safe.
 */
public final class TransactionalOutbox {

  private static final System.Logger LOG = System.getLogger(TransactionalOutbox.class.getName());

  private final JdbcOutboxStore jdbc;
  private final DataSource dataSource;
  private final InMemoryOutboxStore memory;
  private final Payloads payloads;
  private final AppendObservation observation;

  private TransactionalOutbox(JdbcOutboxStore jdbc, DataSource dataSource,
      InMemoryOutboxStore memory, Payloads payloads, AppendObservation observation) {
    this.jdbc = jdbc;
    this.dataSource = dataSource;
    this.memory = memory;
    this.payloads = payloads;
    this.observation = observation;
  }

  /** An observation around each append: {@link RelaykitObservations}. */
  interface AppendObservation {
    /**
     * Runs {@code append} with {@code message}, or with a copy carrying the observation's trace
     * context, and returns what it ran it with.
     */
    Message observeAppend(String destination, Message message, Consumer<Message> append);
  }

  /** This outbox, observing each append with {@code observation} (null for none). */
  TransactionalOutbox withObservation(AppendObservation observation) {
    return new TransactionalOutbox(jdbc, dataSource, memory, payloads, observation);
  }

  /**
   * An outbox appending to {@code store} through the Spring transaction on {@code dataSource}.
   *
   * @param store the JDBC outbox store
   * @param dataSource the DataSource the store's tables live in and the transactions run on
   * @return the outbox
   * @throws NullPointerException if an argument is null
   */
  public static TransactionalOutbox jdbc(JdbcOutboxStore store, DataSource dataSource) {
    return new TransactionalOutbox(Objects.requireNonNull(store, "store"),
        Objects.requireNonNull(dataSource, "dataSource"), null, null, null);
  }

  /**
   * An outbox appending to {@code store} when the caller's Spring transaction commits.
   *
   * @param store the in-memory outbox store
   * @return the outbox
   * @throws NullPointerException if {@code store} is null
   */
  public static TransactionalOutbox inMemory(InMemoryOutboxStore store) {
    return new TransactionalOutbox(null, null, Objects.requireNonNull(store, "store"), null, null);
  }

  /**
   * This outbox, appending typed objects with {@code payloads} ({@link #append(String, String,
   * Object)}); the starter sets its {@link Payloads} bean here.
   *
   * @param payloads the codecs and type names, or null for none (typed appends then fail)
   * @return an outbox on the same store
   */
  public TransactionalOutbox withPayloads(Payloads payloads) {
    return new TransactionalOutbox(jdbc, dataSource, memory, payloads, observation);
  }

  /**
   * The codecs and type names typed appends use.
   *
   * @return the payloads, or null if none is set (no codec on the class path)
   */
  public Payloads payloads() {
    return payloads;
  }

  /**
   * Writes {@code payload}, encoded by {@code destination}'s codec, for {@code destination} in
   * the caller's Spring transaction: {@link Payloads#message} records the payload's type (the
   * message's {@code type}) and the codec's content type (the {@code content-type} header), so a
   * {@link RelaykitListener} method can take the object back. Guarantees, cost and failures are
   * {@link #append(String, Message)}'s, plus one encode.
   *
   * @param destination where a relay publishes the message
   * @param key the ordering key, or null for none
   * @param payload the object; not null
   * @return the appended message (its id and trace id identify it later)
   * @throws IllegalStateException if no codec is configured (put Jackson 3, {@code
   *     tools.jackson.core:jackson-databind}, on the class path, or define a {@link Payloads}
   *     bean), or as {@link #append(String, Message)}; nothing is written
   * @throws IllegalArgumentException if the codec cannot encode the payload, or as {@link
   *     #append(String, Message)}; nothing is written
   * @throws JdbcOutboxException if the database fails the INSERT
   */
  public Message append(String destination, String key, Object payload) {
    if (payloads == null) {
      throw new IllegalStateException("relaykit outbox: no payload codec for typed appends to '"
          + destination + "': put Jackson 3 (tools.jackson.core:jackson-databind) on the class"
          + " path, or define a io.relaykit.codec.Payloads bean; nothing was written");
    }
    return observed(destination, payloads.message(destination, key, payload));
  }

  /**
   * The store relays claim from.
   *
   * @return the store
   */
  public OutboxStore store() {
    return jdbc != null ? jdbc : memory;
  }

  /**
   * Writes {@code message} for {@code destination} in the caller's Spring transaction.
   *
   * @param destination where a relay publishes the message
   * @param message the message
   * @throws IllegalStateException if no Spring transaction is active (for JDBC: none bound to
   *     relaykit's DataSource); nothing is written
   * @throws IllegalArgumentException from the store for a blank destination or an oversized
   *     message; nothing is written
   * @throws JdbcOutboxException if the database fails the INSERT
   */
  public void append(String destination, Message message) {
    observed(destination, message);
  }

  /** {@code message} appended, inside the append observation if there is one. */
  private Message observed(String destination, Message message) {
    if (observation == null) {
      write(destination, message);
      return message;
    }
    Objects.requireNonNull(message, "message must not be null");
    return observation.observeAppend(destination, message, m -> write(destination, m));
  }

  private void write(String destination, Message message) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException("relaykit outbox append to '" + destination
          + "' outside a Spring transaction: call it from a @Transactional method (or a"
          + " TransactionTemplate) so the message commits with your business rows; nothing was"
          + " written");
    }
    if (jdbc == null) {
      Objects.requireNonNull(message, "message must not be null");
      if (destination == null || destination.isBlank()) {
        throw new IllegalArgumentException("destination must not be blank");
      }
      // Refused now, inside the transaction, so the caller's rows roll back with it: after the
      // commit an OutboxFullException could only lose the message.
      OutboxBound bound = memory.bound();
      if (bound.isBounded()) {
        bound.admit(memory.stats(Instant.now()).unsent(), "in-memory outbox");
      }
      TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
        @Override
        public void afterCommit() {
          try {
            memory.append(destination, message);
          } catch (RuntimeException e) {
            // Committed transactions cannot be undone: say loudly which message is lost.
            LOG.log(System.Logger.Level.ERROR, "relaykit in-memory outbox: message "
                + message.id() + " to '" + destination + "' was refused after its transaction"
                + " committed and is lost: " + e, e);
            throw e;
          }
        }
      });
      return;
    }
    if (TransactionSynchronizationManager.getResource(dataSource) == null) {
      throw new IllegalStateException("relaykit outbox append to '" + destination
          + "': the active Spring transaction is not on relaykit's DataSource (its transaction"
          + " manager runs on another one), so the row would not commit with it; nothing was"
          + " written");
    }
    Connection c = DataSourceUtils.getConnection(dataSource);
    try {
      jdbc.append(c, destination, message);
    } catch (SQLException e) {
      throw new JdbcOutboxException("relaykit outbox append to '" + destination
          + "' failed: " + e.getMessage(), e);
    } finally {
      DataSourceUtils.releaseConnection(c, dataSource);
    }
    wakeAfterCommit();
  }

  /**
   * Once per transaction: wakes the relays of this JVM ({@link JdbcOutboxStore#committed()})
   * after the commit, never after a rollback. The marker resource is keyed by this outbox's store,
   * so one transaction appending many rows registers one synchronization; it is unbound while its
   * transaction is suspended, so a REQUIRES_NEW transaction inside it wakes at its own commit.
   */
  private void wakeAfterCommit() {
    Object key = new WakeKey(jdbc);
    if (!TransactionSynchronizationManager.isSynchronizationActive()
        || TransactionSynchronizationManager.hasResource(key)) {
      // Without synchronization (a transaction manager set to SYNCHRONIZATION_NEVER) there is no
      // afterCommit: the relays' poll finds the row.
      return;
    }
    TransactionSynchronizationManager.bindResource(key, Boolean.TRUE);
    TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
      @Override
      public void afterCommit() {
        jdbc.committed();
      }

      // The marker is per transaction: a REQUIRES_NEW transaction inside this one suspends it,
      // and must register its own wake rather than see this one's marker and skip it.
      @Override
      public void suspend() {
        TransactionSynchronizationManager.unbindResourceIfPossible(key);
      }

      @Override
      public void resume() {
        if (!TransactionSynchronizationManager.hasResource(key)) {
          TransactionSynchronizationManager.bindResource(key, Boolean.TRUE);
        }
      }

      @Override
      public void afterCompletion(int status) {
        TransactionSynchronizationManager.unbindResourceIfPossible(key);
      }
    });
  }

  /** The per-transaction marker of {@link #wakeAfterCommit()}. */
  private record WakeKey(JdbcOutboxStore store) {}

  /** An append the database failed; the caller's transaction should roll back. */
  public static final class JdbcOutboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what failed
     * @param cause the database's error
     */
    public JdbcOutboxException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}

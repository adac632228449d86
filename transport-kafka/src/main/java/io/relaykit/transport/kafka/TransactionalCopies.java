package io.relaykit.transport.kafka;

import io.relaykit.message.PublishException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * The transactional hand-off of one consumer runtime ({@link
 * KafkaTransportConfig.HandOff#TRANSACTIONAL}): a transactional producer whose transactions carry
 * the retry and dead-letter copies together with the source offsets that pass them ({@code
 * sendOffsetsToTransaction} with the consumer's group metadata), so that a crash either keeps both
 * or neither.
 *
 * <p>A transaction begins with its first copy and stays open until, at a commit tick, every copy
 * in it is confirmed and the commit watermark (the lowest unfinished offset) of its record's
 * partition has passed that record — or stopped at a record that waits for a parked key, which
 * cannot finish before its key's retry (that needs a committed transaction, maybe this one, and
 * its delay); then the runtime's committable offsets are sent to it and it commits. It is
 * committed anyway when it has been open for half of {@code transaction.timeout.ms} (a record
 * below the copies that runs long would otherwise hold it until the coordinator aborts it); copies
 * past the watermark committed in these ways may be written again after a crash (the default
 * hand-off's guarantee, for those copies only). On revoke and close it commits if the watermark
 * passed its copies, else it is aborted (the records run again, their copies are discarded). While no transaction is
 * open, offsets are committed by the consumer, synchronously, under the same lock a copy takes to
 * open a transaction: no offset past an uncommitted copy's record is ever committed.
 *
 * <p>When a commit or a copy fails, the transaction is aborted (its copies vanish for
 * read_committed readers) and {@link Committer#aborted} tells the runtime, under the lock, to
 * rewind its partitions to their committed offsets (a copy of stale work is refused under that
 * lock, so none slips into the next transaction): the records run again at the attempt the
 * broker last committed. If the abort fails too, the producer is replaced by a new one with the same transactional id, whose
 * {@code initTransactions} finishes whatever the old one left. A producer fenced by a newer one
 * with the same transactional id (another live member with the same member id) is {@link
 * Result#FENCED}: the runtime stops. Thread-safe: copies are sent from workers and timers, commits
 * run on the poll thread.
 */
final class TransactionalCopies {

  /** What a commit tick did. */
  enum Result { NONE_OPEN, KEPT_OPEN, COMMITTED, ABORTED, FENCED }

  /** The runtime's side of a commit. Called on the poll thread, under the hand-off lock. */
  interface Committer {
    /** The offsets to commit now: the changed committable offsets of the owned partitions. */
    Map<TopicPartition, OffsetAndMetadata> offsets();

    /**
     * Whether waiting longer cannot help a copy of record {@code offset} of {@code tp}: the commit
     * watermark is past it, tp is gone, or the watermark stopped at a record waiting for a parked
     * key.
     */
    boolean passed(TopicPartition tp, long offset);

    ConsumerGroupMetadata groupMetadata();

    /** Commits {@code offsets} through the consumer (no transaction open). */
    void commitPlain(Map<TopicPartition, OffsetAndMetadata> offsets);

    /** {@code offsets} were committed (plainly or with a transaction). */
    void committed(Map<TopicPartition, OffsetAndMetadata> offsets);

    /**
     * The open transaction was aborted: make the work behind its copies stale. Runs under the
     * hand-off lock, so no copy of that work can slip into the next transaction.
     */
    void aborted();

    /** The producer was fenced: stop, under the hand-off lock. */
    void fenced();
  }

  private static final System.Logger LOG = System.getLogger(TransactionalCopies.class.getName());

  private final KafkaTransportConfig config;
  private final String transactionalId;
  private final long boundNanos;
  private final ReentrantLock lock = new ReentrantLock();
  private final AtomicInteger pending = new AtomicInteger();
  /** Guarded by lock. */
  private KafkaPublisher router;
  private boolean open;
  private long openedAt;
  private volatile boolean failed;
  /** Counts transactions begun: a late failure of an earlier one's copy does not fail this one. */
  private volatile long epoch;
  private volatile KafkaException fatal;
  /** Of each partition, the highest offset of a record with a copy in the open transaction. */
  private final Map<TopicPartition, Long> copies = new HashMap<>();

  /**
   * Creates the producer and calls {@code initTransactions}, which aborts a transaction an earlier
   * producer with the same id left open (a crashed predecessor) and fences that producer.
   *
   * @throws KafkaException if the transaction coordinator cannot be reached within the publish
   *     timeout ({@code max.block.ms}) or refuses the id
   */
  TransactionalCopies(KafkaTransportConfig config, String transactionalId) {
    this.config = config;
    this.transactionalId = transactionalId;
    this.boundNanos = config.transactionTimeout().toNanos() / 2;
    this.router = newRouter();
  }

  private KafkaPublisher newRouter() {
    KafkaPublisher r = KafkaPublisher.createTransactionalRouter(config, transactionalId);
    try {
      r.producer().initTransactions();
    } catch (RuntimeException e) {
      r.closeNow();
      throw e;
    }
    return r;
  }

  /**
   * The transactional id of {@code topic}'s subscription of {@code group} on this member: {@code
   * <clientIdPrefix>-<group>-<topic>-<member>}, the member being {@link
   * KafkaTransportConfig#memberId()}, else {@code group.instance.id}, else random.
   */
  static String transactionalId(KafkaTransportConfig config, String topic, String group) {
    String member = config.memberId()
        .or(() -> java.util.Optional.ofNullable(
            config.consumerProperties().get("group.instance.id")))
        .orElseGet(() -> java.util.UUID.randomUUID().toString());
    return config.clientIdPrefix() + "-" + group + "-" + topic + "-" + member;
  }

  String transactionalId() {
    return transactionalId;
  }

  /**
   * Sends {@code copy} of {@code w}'s record inside the open transaction, opening one if needed.
   * The future completes on the broker's confirm of the send (not of the transaction).
   */
  CompletableFuture<RecordMetadata> send(Work w, ProducerRecord<String, byte[]> copy,
      String what, java.util.function.BooleanSupplier current) {
    lock.lock();
    try {
      if (!current.getAsBoolean()) {
        // Checked under the lock an abort's rewind holds: stale work never joins a transaction.
        return CompletableFuture.failedFuture(new PublishException(what + " belongs to an"
            + " earlier assignment or an aborted transaction; not sent"));
      }
      if (fatal != null) {
        return CompletableFuture.failedFuture(new PublishException("the transactional producer "
            + transactionalId + " was fenced; " + what + " was not sent", fatal));
      }
      if (!open) {
        try {
          router.producer().beginTransaction();
        } catch (KafkaException e) {
          if (e instanceof ProducerFencedException) {
            fatal = e;
          }
          return CompletableFuture.failedFuture(new PublishException("could not begin a"
              + " transaction for " + what + ": " + e, e));
        }
        open = true;
        openedAt = System.nanoTime();
        epoch++;
      }
      long mine = epoch;
      copies.merge(w.partition(), w.record().offset(), Math::max);
      pending.incrementAndGet();
      return router.send(copy, what).whenComplete((md, error) -> {
        pending.decrementAndGet();
        // A failure from the producer leaves its transaction in error: abort and rewind at the
        // next tick. One without a cause never reached the producer (relaykit's own size check,
        // which dead-letters a reference entry instead): the transaction is fine.
        if (error != null && error.getCause() != null && mine == epoch) {
          failed = true;
          if (causeOf(error) instanceof ProducerFencedException fenced) {
            fatal = fenced;
          }
        }
      });
    } finally {
      lock.unlock();
    }
  }

  private static Throwable causeOf(Throwable error) {
    Throwable t = error;
    while ((t instanceof java.util.concurrent.CompletionException || t instanceof PublishException
        || t instanceof io.relaykit.message.MessageRejectedException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * One commit tick: with no transaction open, commits the offsets through the consumer; with one
   * open, commits it (with the offsets) if its copies are all confirmed and passed by the
   * watermark, or it is older than half the transaction timeout; aborts it if a copy failed. With
   * {@code force} (revoke, close) it never stays open: committed if passed, else aborted.
   *
   * @throws RuntimeException from {@link Committer#commitPlain} (the poll loop's error handling)
   */
  Result commit(Committer c, boolean force) {
    lock.lock();
    try {
      if (fatal != null) {
        return Result.FENCED;
      }
      if (!open) {
        failed = false;
        Map<TopicPartition, OffsetAndMetadata> offsets = c.offsets();
        if (!offsets.isEmpty()) {
          c.commitPlain(offsets);
          c.committed(offsets);
        }
        return Result.NONE_OPEN;
      }
      if (failed) {
        return settle(c, abort("a copy in it failed"));
      }
      boolean aged = System.nanoTime() - openedAt >= boundNanos;
      if (force && !allPassed(c)) {
        // Revoke or close before the watermark passed the copies: committing would keep copies
        // whose records the next owner runs again; aborting discards them, and the records run
        // again at the attempt the broker holds.
        return settle(c, abort("its partitions are revoked or closed before the commit"
            + " watermark passed its copies"));
      }
      if (!force && !aged && (pending.get() > 0 || !allPassed(c))) {
        return Result.KEPT_OPEN;
      }
      if (aged && !force && !allPassed(c)) {
        LOG.log(System.Logger.Level.INFO, "transaction of " + transactionalId + " was open for"
            + " half of transaction.timeout.ms (" + config.transactionTimeout() + ") before the"
            + " commit watermark passed its copies; committing it now");
      }
      Map<TopicPartition, OffsetAndMetadata> offsets = c.offsets();
      try {
        if (!offsets.isEmpty()) {
          router.producer().sendOffsetsToTransaction(offsets, c.groupMetadata());
        }
        router.producer().commitTransaction();
      } catch (KafkaException e) {
        return settle(c, abort("its commit failed: " + e));
      }
      open = false;
      copies.clear();
      c.committed(offsets);
      return Result.COMMITTED;
    } finally {
      lock.unlock();
    }
  }

  private boolean allPassed(Committer c) {
    for (Map.Entry<TopicPartition, Long> e : copies.entrySet()) {
      if (!c.passed(e.getKey(), e.getValue())) {
        return false;
      }
    }
    return true;
  }

  /** Aborts the open transaction (lock held); replaces the producer if the abort fails. */
  private Result abort(String why) {
    open = false;
    copies.clear();
    failed = false;
    if (fatal == null) {
      try {
        router.producer().abortTransaction();
        LOG.log(System.Logger.Level.WARNING, "aborted the transaction of " + transactionalId
            + " because " + why + "; its copies are discarded and its records run again from"
            + " the committed offsets");
        return Result.ABORTED;
      } catch (ProducerFencedException | InvalidProducerEpochException e) {
        fatal = e;
      } catch (AuthorizationException | UnsupportedVersionException e) {
        fatal = e;
      } catch (KafkaException e) {
        LOG.log(System.Logger.Level.WARNING, "could not abort the transaction of "
            + transactionalId + " (" + e + "); replacing its producer", e);
      }
    }
    router.closeNow();
    if (fatal != null) {
      LOG.log(System.Logger.Level.ERROR, "transactional producer " + transactionalId
          + " cannot go on (" + fatal + "): another member with the same member id runs, or"
          + " the id is not authorized", fatal);
      return Result.FENCED;
    }
    try {
      router = newRouter(); // its initTransactions settles the old producer's transaction
    } catch (KafkaException e) {
      fatal = e;
      return Result.FENCED;
    }
    return Result.ABORTED;
  }

  /**
   * Aborts the open transaction now, if any (partitions were lost: its offsets can no longer be
   * committed by this member), and tells {@code c} under the lock.
   */
  Result abortOpen(Committer c, String why) {
    lock.lock();
    try {
      if (fatal != null) {
        return Result.FENCED;
      }
      if (!open) {
        return Result.NONE_OPEN;
      }
      return settle(c, abort(why));
    } finally {
      lock.unlock();
    }
  }

  private static Result settle(Committer c, Result r) {
    if (r == Result.FENCED) {
      c.fenced();
    } else if (r == Result.ABORTED) {
      c.aborted();
    }
    return r;
  }

  /** Whether a transaction is open (tests). */
  boolean isOpen() {
    lock.lock();
    try {
      return open;
    } finally {
      lock.unlock();
    }
  }

  KafkaException fatal() {
    return fatal;
  }

  /** Closes the producer, aborting an open transaction (a crash would leave it to the timeout). */
  void close(Duration timeout) {
    lock.lock();
    try {
      router.producer().close(timeout);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "closing " + transactionalId + " failed: " + e);
    } finally {
      lock.unlock();
    }
  }
}

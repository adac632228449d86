package io.relaykit.transport.kafka;

import io.relaykit.deadletter.DeadLetterLog;
import io.relaykit.deadletter.FailureRoute;
import io.relaykit.internal.Texts;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * The hand-off of failed records of one subscription to the broker, after {@link FailureRoute}
 * decided where they go: a retry copy to the retry topic, or a dead-letter copy (or, when that is
 * refused, a bounded reference entry) to the dead-letter topic. A record counts as done only when
 * the broker confirmed its copy; until then a transient send failure is retried every {@link
 * #RESEND_DELAY} on the timer, as long as the record is current ({@link Owner#current}): a copy of
 * stale work is never written. A record is never left unfinished: if even the reference entry is
 * refused, the record is finished with an error log and a {@code dropped(topic,
 * "dead-letter-refused")} count, since an unfinished record stops its partition's commit for good.
 *
 * <p>With {@link KafkaTransportConfig.HandOff#TRANSACTIONAL} the copies go through {@link
 * TransactionalCopies}: "confirmed" then means written inside the open transaction, which the
 * poll thread commits together with the offsets that pass the records.
 *
 * <p>Callbacks run on the producer's I/O thread or the copies' own executor (never the handler
 * watchdog's timer: a send blocked on metadata must not delay another handler's timeout): they do
 * not block. Thread-safe.
 */
final class CopyHandOff {

  /** The consumer runtime's side of the hand-off. */
  interface Owner {
    /** Whether {@code w} belongs to its partition's current assignment of a running runtime. */
    boolean current(Work w);

    /** The retry copy of {@code w} (key {@code key}, may be null) is confirmed at {@code copyAt}. */
    void retried(Work w, Object key, RecordMetadata copyAt);

    /** The broker refused {@code w}'s retry copy for good; it is dead-lettered next. */
    void retryRefused(Work w, Object key);

    /** {@code w} is done: its dead-letter copy is confirmed, or could not be written at all. */
    void finish(Work w);

    /**
     * A copy of {@code w} failed with a transient error: true (the default) to send it again after
     * {@link #RESEND_DELAY}; false when the owner gives the record back instead (a share group
     * releases it for redelivery) and nothing more is to be sent.
     */
    default boolean resendAfter(Work w, Throwable cause) {
      return true;
    }

    /** Neither the dead-letter copy nor its reference entry could be written: {@link #finish}. */
    default void dropped(Work w) {
      finish(w);
    }

    /**
     * No copy of {@code w} is written because it is no longer {@link #current} (revoked, its share
     * lock lost, or closing): the owner settles whatever it still counts for it. Nothing by
     * default: a consumer group's revoke already dropped the record's tracking.
     */
    default void abandoned(Work w) {}
  }

  /** Sends one copy of {@code w}'s record; the future completes on the broker's confirm. */
  interface Sender {
    CompletableFuture<RecordMetadata> send(Work w, ProducerRecord<String, byte[]> copy,
        String what);
  }

  private static final System.Logger LOG = System.getLogger(CopyHandOff.class.getName());
  /** How long to wait before handing a record to the retry or dead-letter topic again. */
  static final Duration RESEND_DELAY = Duration.ofSeconds(1);
  /** The longest reason and exception message of a reference dead letter, in UTF-8 bytes. */
  private static final int REFERENCE_TEXT_BYTES = 512;

  private final Sender router;
  private final ScheduledExecutorService timers;
  private final LifecycleListener listener;
  private final MetricsListener metrics;
  private final InstantSource clock;
  private final String topic;
  private final String group;
  private final String retryTopic;
  private final int retryPartitions;
  private final String deadLetterTopic;
  private final Owner owner;

  CopyHandOff(Sender router, ScheduledExecutorService timers, KafkaTransportConfig config,
      MetricsListener metrics, String topic, String group, String retryTopic, int retryPartitions,
      String deadLetterTopic, Owner owner) {
    this.router = router;
    this.timers = timers;
    this.listener = config.listener();
    this.metrics = metrics;
    this.clock = config.clock();
    this.topic = topic;
    this.group = group;
    this.retryTopic = retryTopic;
    this.retryPartitions = retryPartitions;
    this.deadLetterTopic = deadLetterTopic;
    this.owner = owner;
  }

  /**
   * Writes {@code w}'s retry copy ({@code route}'s headers, due at its retry time) to the retry
   * partition numbered like its source partition; on the broker's confirm, emits RETRIED and calls
   * {@link Owner#retried}. A copy the broker refuses for good (too large, not authorized) releases
   * the key ({@link Owner#retryRefused}) and dead-letters the record instead. Transient failures
   * are retried every {@link #RESEND_DELAY} while the record is current.
   */
  void retry(Work w, Map<String, String> wire, Message message, FailureRoute route,
      String sourcePosition, Object key) {
    if (!owner.current(w)) {
      owner.abandoned(w);
      return; // revoked meanwhile (its holds went with it): the current owner redoes it
    }
    Map<String, String> headers = route.headers(wire);
    headers.put(MessageHeaders.SOURCE_POSITION, sourcePosition);
    ProducerRecord<String, byte[]> copy = new ProducerRecord<>(retryTopic,
        retryPartition(w, sourcePosition), copyKey(w, message), message.payload(),
        KafkaRecords.toHeaders(headers));
    sendDurably(w, copy, message.id(), md -> {
      if (listener != KafkaTransportConfig.NO_LISTENER) {
        LifecycleListener.safely(listener, new LifecycleEvent(LifecycleEvent.Stage.RETRIED,
            message.id(), message.traceId(), topic, clock.instant(), "attempt " + route.attempt()
            + " failed, retry after " + route.delay() + " via "
            + KafkaRecords.position(md.topic(), md.partition(), md.offset())));
      }
      owner.retried(w, key, md);
    }, rejected -> {
      owner.retryRefused(w, key);
      deadLetter(w, wire, message, route.deadLetterInstead("retry copy refused: "
          + rejected.getMessage()), sourcePosition);
    });
  }

  /**
   * The retry partition a copy goes to: the one numbered like the record's source partition
   * (modulo the retry topic's partitions, should the source have grown), so that the copy lands
   * where its key's park lives whenever the assignor gives a member the same partitions of both
   * topics (the range assignor, classic or KIP-848, does for equal partition counts). Where it
   * does not, {@link KeyParking#moveHold} releases the park rather than hold it for a copy another
   * member runs.
   */
  private int retryPartition(Work w, String sourcePosition) {
    var source = KafkaRecords.parsePosition(sourcePosition);
    int partition = source != null ? source.getKey().partition() : w.partition().partition();
    return Math.floorMod(partition, retryPartitions);
  }

  /**
   * Dead-letters a record that could not be decoded ({@link KafkaRecords.Read#malformed}), with
   * the headers it arrived with, after counting it as dropped {@code malformed}.
   */
  void deadLetterUndecodable(Work w, KafkaRecords.Read read, Instant now) {
    deadLetterUndecodable(w, read.wire(), read.malformed(), now);
  }

  /**
   * Dead-letters a record that a step before its handler refused ({@code failure}: a relaykit
   * failure header that is not a number or an instant, a blank source), with the headers it
   * arrived with, after counting it as dropped {@code malformed}: the reason names the failure.
   */
  void deadLetterUndecodable(Work w, Map<String, String> wire, Throwable failure, Instant now) {
    MetricsListener.safely(metrics, m -> m.dropped(topic, "malformed", 1));
    deadLetter(w, wire, null, FailureRoute.undecodable(topic, failure, now), w.position());
  }

  /**
   * The key of {@code w}'s copies: the decoded message's key (for a foreign record, the key mapped
   * from its key header), so that the retry's handler, its ordering and the dead-letter store see
   * the key the first attempt saw; the record's own key when it could not be decoded.
   */
  private static String copyKey(Work w, Message message) {
    return message != null ? message.key().orElse(null) : w.record().key();
  }

  /**
   * Writes {@code w}'s dead-letter copy (original key, the payload the handler saw: a structured
   * CloudEvent's data, not the JSON event, and the original value of an undecodable record; the
   * headers plus {@code route}'s failure headers, the source position and the group); on the
   * broker's confirm, emits
   * DEAD_LETTERED and finishes the record. A copy refused for good becomes a reference entry.
   *
   * @param message the decoded message; null for an undecodable record
   */
  void deadLetter(Work w, Map<String, String> wire, Message message, FailureRoute route,
      String sourcePosition) {
    if (!owner.current(w)) {
      owner.abandoned(w);
      return;
    }
    Map<String, String> headers = route.headers(wire);
    headers.put(MessageHeaders.SOURCE_POSITION, sourcePosition);
    headers.put(MessageHeaders.GROUP, group);
    ProducerRecord<String, byte[]> copy = new ProducerRecord<>(deadLetterTopic, null,
        copyKey(w, message), message != null ? message.payload() : w.record().value(),
        KafkaRecords.toHeaders(headers));
    String id = message != null ? message.id() : "dlt:" + sourcePosition;
    sendDurably(w, copy, id, md -> deadLettered(w, id, message, route),
        rejected -> deadLetterReference(w, wire, message, route, sourcePosition, id, rejected));
  }

  /**
   * Sends {@code w}'s dead-letter copy once, outside the record's life cycle: no ownership check,
   * no resend, no {@link Owner} callback, DEAD_LETTERED emitted on the confirm. For a share member
   * that gives a record up while it closes, on the poll thread that then acknowledges it.
   *
   * @param message the decoded message; null for an undecodable record
   * @return completes on the broker's confirm, or exceptionally
   */
  CompletableFuture<RecordMetadata> deadLetterOnce(Work w, Map<String, String> wire,
      Message message, FailureRoute route) {
    Map<String, String> headers = route.headers(wire);
    headers.put(MessageHeaders.SOURCE_POSITION, w.position());
    headers.put(MessageHeaders.GROUP, group);
    ProducerRecord<String, byte[]> copy = new ProducerRecord<>(deadLetterTopic, null,
        copyKey(w, message), w.record().value(), KafkaRecords.toHeaders(headers));
    String id = message != null ? message.id() : "dlt:" + w.position();
    return router.send(w, copy, id).thenApply(md -> {
      LifecycleListener.safely(listener, new LifecycleEvent(LifecycleEvent.Stage.DEAD_LETTERED,
          id, message != null ? message.traceId() : null, topic, clock.instant(), route.reason()));
      DeadLetterLog.shared().deadLettered(metrics, id, topic, group, route.attempt(),
          route.reason());
      return md;
    });
  }

  /**
   * Dead-letters a reference entry when the full copy was refused (the failure headers, bounded as
   * they are, pushed a record that fit over {@code maxRecordBytes}; or the topic refused it): the
   * envelope and failure headers without the user's headers, a short body naming the original's
   * position, and {@link KafkaDeadLetterStore#REFERENCE}, so that a replay reads the original
   * record from the source. If even that is refused the record is finished anyway, with an error
   * log and a {@code dropped(topic, "dead-letter-refused")} count: a record that is never finished
   * stops its partition's commit for good and replays on every restart.
   */
  private void deadLetterReference(Work w, Map<String, String> wire, Message message,
      FailureRoute route, String sourcePosition, String id, RuntimeException refused) {
    FailureRoute ref = route.deadLetterInstead(Texts.truncateUtf8(
        "this entry refers to the original at " + sourcePosition + " (the full dead-letter copy"
        + " was refused: " + refused.getMessage() + "); " + route.reason(), REFERENCE_TEXT_BYTES));
    Map<String, String> envelope = new LinkedHashMap<>();
    wire.forEach((k, v) -> {
      if (MessageHeaders.isReserved(k)) {
        envelope.put(k, v);
      }
    });
    Map<String, String> headers = ref.headers(envelope);
    headers.computeIfPresent(MessageHeaders.EXCEPTION_MESSAGE,
        (k, v) -> Texts.truncateUtf8(v, REFERENCE_TEXT_BYTES));
    headers.put(MessageHeaders.SOURCE_POSITION, sourcePosition);
    headers.put(MessageHeaders.GROUP, group);
    headers.put(KafkaDeadLetterStore.REFERENCE, sourcePosition);
    byte[] body = ("dead letter " + id + " was too large for " + deadLetterTopic
        + "; the original record is at " + sourcePosition)
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    ProducerRecord<String, byte[]> copy = new ProducerRecord<>(deadLetterTopic, null,
        copyKey(w, message), body, KafkaRecords.toHeaders(headers));
    LOG.log(System.Logger.Level.WARNING, "dead-letter topic " + deadLetterTopic + " refused " + w
        + " (" + refused.getMessage() + "); writing a reference entry instead");
    sendDurably(w, copy, id, md -> deadLettered(w, id, message, ref), again -> {
      LOG.log(System.Logger.Level.ERROR, "dead-letter topic " + deadLetterTopic + " refused "
          + w + " and its reference entry (" + again.getMessage() + "); the record is dropped"
          + " so that its partition's commit can go on");
      MetricsListener.safely(metrics, m -> m.dropped(topic, "dead-letter-refused", 1));
      owner.dropped(w);
    });
  }

  private void deadLettered(Work w, String id, Message message, FailureRoute route) {
    LifecycleListener.safely(listener, new LifecycleEvent(LifecycleEvent.Stage.DEAD_LETTERED,
        id, message != null ? message.traceId() : null, topic, clock.instant(), route.reason()));
    DeadLetterLog.shared().deadLettered(metrics, id, topic, group, route.attempt(),
        route.reason());
    owner.finish(w);
  }

  /**
   * Sends a retry or dead-letter copy until the broker confirms it, as long as the record's
   * partition is still ours: the record is not done (not committable) before that.
   */
  private void sendDurably(Work w, ProducerRecord<String, byte[]> copy, String what,
      Consumer<RecordMetadata> onSent, Consumer<RuntimeException> onRejected) {
    router.send(w, copy, what).whenComplete((md, error) -> {
      if (error == null) {
        onSent.accept(md);
        return;
      }
      Throwable cause = error instanceof CompletionException && error.getCause() != null
          ? error.getCause() : error;
      if (cause instanceof MessageRejectedException rejected) {
        // Not on the producer's I/O thread: the next copy's send may block (metadata, or the
        // transactional hand-off's lock while a commit waits for this very thread).
        try {
          timers.execute(() -> onRejected.accept(rejected));
        } catch (RejectedExecutionException e) {
          onRejected.accept(rejected); // closing: the ownership checks skip what is not ours
        }
        return;
      }
      if (!owner.current(w)) {
        owner.abandoned(w);
        return; // not committed: the current owner redoes it
      }
      if (!owner.resendAfter(w, cause)) {
        LOG.log(System.Logger.Level.WARNING, "could not hand " + w + " to " + copy.topic()
            + " (" + cause + "); given back for redelivery");
        return;
      }
      LOG.log(System.Logger.Level.WARNING, "could not hand " + w + " to " + copy.topic()
          + " (" + cause + "); trying again in " + RESEND_DELAY);
      try {
        timers.schedule(() -> sendDurably(w, copy, what, onSent, onRejected),
            RESEND_DELAY.toMillis(), TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException e) {
        // Closing: the record stays uncommitted.
      }
    });
  }
}

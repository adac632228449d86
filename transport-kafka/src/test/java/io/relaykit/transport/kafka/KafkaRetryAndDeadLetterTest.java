package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.numberedMessages;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.FailureClassifier;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@DisplayName("Kafka retries and dead letters on a real broker")
class KafkaRetryAndDeadLetterTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static RetryPolicy quickRetries(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts)
        .backoff(Backoff.fixed(Duration.ofMillis(300))).build();
  }

  /** One handler call: which message, which attempt, and when. */
  private record Call(String key, int seq, int attempt, Instant at) {}

  @Test
  @DisplayName("a poison record goes to the DLT after max attempts while other keys flow; its key's"
      + " later record waits for it; replay brings it back")
  void poisonRecordIsDeadLetteredAndReplayed() {
    String topic = newTopic("poison", 1);
    String group = topic + "-g";
    List<Message> messages = new ArrayList<>();
    messages.add(message("poison", 0));
    for (int i = 1; i <= 30; i++) {
      messages.add(message("k" + (i % 5), i));
    }
    messages.add(message("poison", 31)); // same key, after the poison
    publishAll(topic, messages);

    AtomicBoolean poisoned = new AtomicBoolean(true);
    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY).concurrency(4)
            .maxInFlight(64).retryPolicy(quickRetries(3)).build(),
        d -> {
          int seq = Integer.parseInt(d.message().payloadUtf8());
          calls.add(new Call(d.message().key().orElseThrow(), seq, d.attempt(), Instant.now()));
          if (seq == 0 && poisoned.get()) {
            throw new IllegalStateException("cannot digest record 0");
          }
        });
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "poison dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    Await.until(WAIT, "its key's later record handled", () -> calls.stream()
        .anyMatch(c -> c.seq() == 31));

    List<Call> poisonCalls = calls.stream().filter(c -> c.seq() == 0).toList();
    assertThat(poisonCalls).extracting(Call::attempt).containsExactly(1, 2, 3);
    Instant lastPoisonAttempt = poisonCalls.get(2).at();
    // Other keys flowed while the poison waited in the retry topic.
    List<Call> others = calls.stream().filter(c -> !c.key().equals("poison")).toList();
    assertThat(others).hasSize(30);
    assertThat(others).allMatch(c -> c.at().isBefore(lastPoisonAttempt));
    // The poison's key was parked: its later record ran only after the poison gave up.
    Call later = calls.stream().filter(c -> c.seq() == 31).findFirst().orElseThrow();
    assertThat(later.at()).isAfterOrEqualTo(lastPoisonAttempt);

    DeadLetter d = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(d.messageId()).isEqualTo(messages.get(0).id());
    assertThat(d.message()).isEqualTo(messages.get(0));
    assertThat(d.source()).isEqualTo(topic);
    assertThat(d.group()).isEqualTo(group);
    assertThat(d.reason()).startsWith("attempts exhausted (3 of 3)");
    assertThat(d.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
    assertThat(d.exceptionMessage()).isEqualTo("cannot digest record 0");
    assertThat(d.attempts()).isEqualTo(3);
    assertThat(d.lastFailureAt()).isAfter(d.firstFailureAt());
    // The raw DLT record carries the source position too.
    ConsumerRecord<String, byte[]> raw = KafkaTestSupport.readAll(dlt.topic(), 1).get(0);
    assertThat(KafkaRecords.fromHeaders(raw.headers()))
        .containsEntry(MessageHeaders.SOURCE_POSITION, topic + "-0@0")
        .containsEntry(MessageHeaders.SOURCE, topic);
    assertThat(raw.key()).isEqualTo("poison");
    assertThat(new String(raw.value(), StandardCharsets.UTF_8)).isEqualTo("0");
    Await.until(WAIT, "everything committed", () -> Long.valueOf(32)
        .equals(committedOffsets(group, topic).get(0)));

    poisoned.set(false);
    assertThat(dlt.replay(d.id())).contains(d);
    Await.until(WAIT, "replayed poison handled", () -> calls.stream()
        .filter(c -> c.seq() == 0).count() == 4);
    assertThat(calls.stream().filter(c -> c.seq() == 0).toList().get(3).attempt()).isEqualTo(1);
    assertThat(dlt.count(DeadLetterQuery.all())).isZero();
    assertThat(dlt.replay(d.id())).as("a second replay resends nothing").isEmpty();
    // The replay went into the group's retry topic, not the shared source topic.
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    Await.until(WAIT, "replayed record committed on the retry topic", () -> {
      long end = KafkaTestSupport.endOffset(retryTopic, 0);
      return Long.valueOf(end).equals(committedOffsets(group, retryTopic).get(0));
    });
    assertThat(KafkaTestSupport.endOffset(topic, 0)).isEqualTo(32);
    assertThat(calls.stream().filter(c -> c.seq() == 0).count()).isEqualTo(4);
    sub.close(Duration.ofSeconds(5));
  }

  @Test
  @DisplayName("on a relaykitOnly subscription an undecodable record goes to the DLT with the reason; a keyless record in KEY mode"
      + " is delivered unordered; the records around them are handled")
  void badInputGoesToDeadLettersOrRunsUnordered() throws Exception {
    String topic = newTopic("badinput", 1);
    String group = topic + "-g";
    try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers()), new StringSerializer(),
        new ByteArraySerializer())) {
      raw.send(new ProducerRecord<>(topic, "k1", "no envelope".getBytes(StandardCharsets.UTF_8)))
          .get(30, TimeUnit.SECONDS);
      raw.send(new ProducerRecord<>(topic, "k1", null)).get(30, TimeUnit.SECONDS);
    }
    Message keyless = Message.builder().type("test").payload("keyless").build();
    Message good = message("k2", 7);
    publishAll(topic, List.of(keyless, good));

    List<Delivery> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).inbound(InboundMapping.relaykitOnly()).build(), handled::add);
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "two dead letters", () -> dlt.count(DeadLetterQuery.all()) == 2);
    Await.until(WAIT, "keyless and good records handled", () -> handled.size() == 2);
    assertThat(handled).extracting(Delivery::message).containsExactlyInAnyOrder(keyless, good);

    DeadLetter undecodable = dlt.list(DeadLetterQuery.all().withMessageId("dlt:" + topic + "-0@0"))
        .stream().findFirst().orElseThrow();
    assertThat(undecodable.reason()).isEqualTo("undecodable: missing header relaykit-id");
    assertThat(undecodable.message().type()).isEqualTo(KafkaDeadLetterStore.UNDECODABLE_TYPE);
    assertThat(undecodable.message().payloadUtf8()).isEqualTo("no envelope");
    assertThat(undecodable.message().key()).contains("k1");
    assertThat(undecodable.attempts()).isZero();
    assertThat(undecodable.exceptionClass())
        .isEqualTo(io.relaykit.message.MalformedMessageException.class.getName());
    DeadLetter tombstone = dlt.list(DeadLetterQuery.all().withMessageId("dlt:" + topic + "-0@1"))
        .stream().findFirst().orElseThrow();
    assertThat(tombstone.reason()).startsWith("undecodable: ");
    assertThat(tombstone.message().payloadUtf8()).isEqualTo("(empty)");
    assertThat(dlt.list(DeadLetterQuery.all().withType(KafkaDeadLetterStore.UNDECODABLE_TYPE)))
        .containsExactly(undecodable, tombstone);
    assertThat(dlt.list(DeadLetterQuery.all().withType("test"))).isEmpty();
    Await.until(WAIT, "all four committed", () -> Long.valueOf(4)
        .equals(committedOffsets(group, topic).get(0)));

    assertThatThrownBy(() -> dlt.remove(undecodable.id()))
        .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("replay");
    assertThatThrownBy(() -> dlt.purge(DeadLetterQuery.all()))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> dlt.find(" ")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  @DisplayName("a handler past its timeout counts as a retryable failure and its late result is"
      + " ignored")
  void handlerTimeoutIsARetryableFailure() {
    String topic = newTopic("timeout", 1);
    String group = topic + "-g";
    Message slow = message("s", 1);
    publishAll(topic, List.of(slow));

    CountDownLatch release = new CountDownLatch(1);
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    List<Integer> finished = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.UNORDERED).concurrency(2).handlerTimeout(Duration.ofMillis(500))
        .retryPolicy(quickRetries(3)).build(),
        d -> {
          attempts.add(d.attempt());
          if (d.attempt() == 1) {
            // Ignores the interrupt the timeout sends, and finishes only when told to.
            boolean done = false;
            while (!done) {
              try {
                done = release.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                // keep waiting, like a handler stuck in a blocking call that ignores interrupts
              }
            }
          }
          finished.add(d.attempt());
        });
    Await.until(WAIT, "second attempt finished", () -> finished.contains(2));
    assertThat(attempts).containsExactly(1, 2);
    release.countDown();
    Await.until(WAIT, "late first attempt returned", () -> finished.contains(1));
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    assertThat(dlt.count(DeadLetterQuery.all())).isZero();
    Await.until(WAIT, "committed", () -> Long.valueOf(1)
        .equals(committedOffsets(group, topic).get(0)));
    // The retry copy on the retry topic carries our attempt count and the timeout as the failure.
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    ConsumerRecord<String, byte[]> copy = KafkaTestSupport.readAll(retryTopic, 1).get(0);
    assertThat(KafkaRecords.fromHeaders(copy.headers()))
        .containsEntry(MessageHeaders.ATTEMPT, "1")
        .containsEntry(MessageHeaders.ID, slow.id())
        .containsEntry(MessageHeaders.EXCEPTION_CLASS,
            java.util.concurrent.TimeoutException.class.getName())
        .containsKey(MessageHeaders.RETRY_AT);
  }

  @Test
  @DisplayName("KEY mode: a record that times out parks its key before the key's next record can"
      + " start; that record runs only after the retry has finished")
  void timeoutParksTheKeyBeforeItsNextRecordRuns() {
    String topic = newTopic("timeoutorder", 1);
    String group = topic + "-g";
    publishAll(topic, List.of(message("k", 0), message("k", 1)));

    // Lock-free, so that no handler thread ever shows as BLOCKED because of the test itself.
    Queue<String> log = new ConcurrentLinkedQueue<>();
    AtomicReference<Thread> timedOutWorker = new AtomicReference<>();
    // The retry policy runs on the timer thread between the timeout and the parking of the key.
    // Here it dwells there until the key's next record has started (the key was not parked in
    // time) or the timed-out record's worker is blocked waiting for this routing to finish.
    FailureClassifier dwellsOnTimeout = failure -> {
      if (failure instanceof TimeoutException) {
        try {
          Await.until(Duration.ofSeconds(10), "next record started, or the worker waits", () ->
              log.contains("start 1#1")
                  || timedOutWorker.get().getState() == Thread.State.BLOCKED);
        } catch (AssertionError e) {
          // neither: go on, the order asserted below decides
        }
      }
      return FailureClassifier.Kind.RETRYABLE;
    };
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(2).handlerTimeout(Duration.ofMillis(500))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(100))).classifier(dwellsOnTimeout).build())
        .build(),
        d -> {
          String call = d.message().payloadUtf8() + "#" + d.attempt();
          log.add("start " + call);
          if (call.equals("0#1")) {
            timedOutWorker.set(Thread.currentThread());
            new CountDownLatch(1).await(); // until the timeout interrupts it
          }
          log.add("end " + call);
        });

    Await.until(WAIT, "the retry and the next record handled",
        () -> log.contains("end 0#2") && log.contains("end 1#1"));
    assertThat(log).containsExactly("start 0#1", "start 0#2", "end 0#2", "start 1#1", "end 1#1");
    Await.until(WAIT, "both committed", () -> Long.valueOf(2)
        .equals(committedOffsets(group, topic).get(0)));
  }
}

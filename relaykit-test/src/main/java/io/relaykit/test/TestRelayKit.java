package io.relaykit.test;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * relaykit on the in-process transport, watched: what was published to each destination, what each
 * consumer group handled, the dead letters of a group and the outbox backlog, with waits that fail
 * at a deadline, and handler failures injected on demand.
 *
 * <p>Use it through {@link RelayKitExtension} (plain Java) or {@code @RelaykitTest} (Spring Boot);
 * both build one from the same parts. Publish through {@link #publisher()} and subscribe through
 * {@link #subscriber()} (the relay and the Spring listeners do), so that it sees the traffic; the
 * transport underneath is a real {@link InProcessTransport}, with its retries, ordering and dead
 * letters.
 *
 * <p>Bounds: it keeps at most {@value #MAX_RECORDS} published messages per destination and
 * {@value #MAX_RECORDS} handled deliveries per group; beyond that it counts what it did not keep,
 * and a wait or a list that may have missed something says so in its failure message. Thread-safe.
 */
public final class TestRelayKit {
  /** Records kept per destination (published) and per group (handled). */
  public static final int MAX_RECORDS = 10_000;

  private final InProcessTransport transport;
  private final OutboxStore outbox;
  private final DeadLetterStore deadLetters;
  private final FakeClock clock;
  private final RecordingPublisher publisher;
  private final RecordingSubscriber subscriber;
  private final Map<String, Records<Message>> published = new ConcurrentHashMap<>();
  private final Map<String, Records<Delivery>> handled = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> failNext = new ConcurrentHashMap<>();

  private TestRelayKit(InProcessTransport transport, OutboxStore outbox,
      DeadLetterStore deadLetters, FakeClock clock) {
    this.transport = Objects.requireNonNull(transport, "transport");
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.deadLetters = Objects.requireNonNull(deadLetters, "deadLetters");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.publisher = new RecordingPublisher();
    this.subscriber = new RecordingSubscriber();
  }

  /**
   * Watches {@code transport}; {@code outbox} and {@code deadLetters} are the stores the relay and
   * the transport write to, {@code clock} the one they were built with.
   *
   * @param transport the in-process transport (its dead letters must go to {@code deadLetters})
   * @param outbox the outbox the relay drains
   * @param deadLetters the dead-letter store of the transport and the relay
   * @param clock the clock of the transport, the stores and the relay
   * @return the harness
   * @throws NullPointerException if an argument is null
   */
  public static TestRelayKit of(InProcessTransport transport, OutboxStore outbox,
      DeadLetterStore deadLetters, FakeClock clock) {
    return new TestRelayKit(transport, outbox, deadLetters, clock);
  }

  /**
   * A retry policy for tests: {@code maxAttempts} attempts in all, 1 ms apart, so a test of
   * retries and dead letters takes milliseconds.
   *
   * @param maxAttempts total attempts including the first, {@code >= 1}
   * @return the policy
   * @throws IllegalArgumentException if {@code maxAttempts < 1}
   */
  public static RetryPolicy fastRetries(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts)
        .backoff(Backoff.fixed(Duration.ofMillis(1))).build();
  }

  /**
   * A handler that fails the first {@code times} attempts of each message (by message id) with an
   * {@link InjectedFailure}, a retryable failure, and then runs {@code handler}.
   *
   * @param times failed attempts per message, {@code >= 0}
   * @param handler what runs after them
   * @return the wrapped handler
   * @throws IllegalArgumentException if {@code times < 0}
   * @throws NullPointerException if {@code handler} is null
   */
  public static MessageHandler failingFirst(int times, MessageHandler handler) {
    if (times < 0) {
      throw new IllegalArgumentException("times must be >= 0, was " + times);
    }
    Objects.requireNonNull(handler, "handler");
    Map<String, Integer> attempts = new HashMap<>();
    return delivery -> {
      int attempt;
      synchronized (attempts) {
        attempt = attempts.merge(delivery.message().id(), 1, Integer::sum);
      }
      if (attempt <= times) {
        throw new InjectedFailure("injected failure " + attempt + " of " + times + " for message "
            + delivery.message().id());
      }
      handler.handle(delivery);
    };
  }

  /**
   * The controllable clock of the transport, the stores and the relay.
   *
   * @return the controllable clock of the transport, the stores and the relay
   */
  public FakeClock clock() {
    return clock;
  }

  /**
   * The transport underneath (not recorded: prefer {@link #publisher()} and {@link #subscriber()}).
   *
   * @return the in-process transport
   */
  public InProcessTransport transport() {
    return transport;
  }

  /**
   * The publisher to use: the transport's, recording what it publishes. Closing it does nothing.
   *
   * @return the recording publisher
   */
  public Publisher publisher() {
    return publisher;
  }

  /**
   * The subscriber to use: the transport's, recording what each group handled and failing
   * deliveries on {@link #failNext}. Closing it does nothing (the transport's owner closes it).
   *
   * @return the recording subscriber
   */
  public Subscriber subscriber() {
    return subscriber;
  }

  /**
   * The outbox the relay drains.
   *
   * @return the outbox the relay drains
   */
  public OutboxStore outbox() {
    return outbox;
  }

  /**
   * The dead-letter store of the transport and the relay.
   *
   * @return the dead-letter store of the transport and the relay
   */
  public DeadLetterStore deadLetterStore() {
    return deadLetters;
  }

  /**
   * Subscribes {@code handler} through {@link #subscriber()}.
   *
   * @param spec the subscription
   * @param handler the handler
   * @return the subscription (closed with the transport)
   */
  public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    return subscriber.subscribe(spec, handler);
  }

  /**
   * The messages published to {@code destination} so far, oldest first (a copy).
   *
   * @param destination the destination
   * @return the messages; empty if none
   */
  public List<Message> published(String destination) {
    return records(published, destination).list();
  }

  /**
   * The payloads published to {@code destination}, decoded by {@code decoder} (for typed payloads:
   * your codec, e.g. {@code m -> json.readValue(m.payload(), OrderPlaced.class)}).
   *
   * @param destination the destination
   * @param decoder maps a message to its typed payload
   * @param <T> the payload type
   * @return the decoded payloads, oldest first
   */
  public <T> List<T> published(String destination, Function<Message, T> decoder) {
    return published(destination).stream().map(decoder).toList();
  }

  /**
   * Waits until a message matching {@code match} was published to {@code destination}.
   *
   * @param destination the destination
   * @param match what the message must satisfy
   * @param timeout the deadline
   * @return the first matching message
   * @throws AssertionError at the deadline, listing what was published there
   */
  public Message awaitPublished(String destination, Predicate<Message> match, Duration timeout) {
    Records<Message> r = records(published, destination);
    return awaitFirst(r, match, timeout, "a message matching the condition published to "
        + destination, m -> m.id());
  }

  /**
   * The deliveries {@code group} handled successfully so far, oldest first (a copy).
   *
   * @param group the consumer group
   * @return the deliveries; empty if none
   */
  public List<Delivery> handled(String group) {
    return records(handled, group).list();
  }

  /**
   * Waits until {@code group} has handled the message {@code messageId} successfully (its handler
   * returned).
   *
   * @param group the consumer group
   * @param messageId the message's id
   * @param timeout the deadline
   * @return the successful delivery ({@link Delivery#attempt()} says on which attempt)
   * @throws AssertionError at the deadline, listing the ids the group did handle
   */
  public Delivery awaitHandled(String group, String messageId, Duration timeout) {
    Objects.requireNonNull(messageId, "messageId");
    return awaitHandled(group, m -> m.id().equals(messageId), timeout,
        "message " + messageId + " handled by " + group);
  }

  /**
   * Waits until {@code group} has handled a message matching {@code match}.
   *
   * @param group the consumer group
   * @param match what the message must satisfy
   * @param timeout the deadline
   * @return the first matching successful delivery
   * @throws AssertionError at the deadline, listing the ids the group did handle
   */
  public Delivery awaitHandled(String group, Predicate<Message> match, Duration timeout) {
    return awaitHandled(group, match, timeout, "a matching message handled by " + group);
  }

  private Delivery awaitHandled(String group, Predicate<Message> match, Duration timeout,
      String what) {
    Objects.requireNonNull(match, "match");
    return awaitFirst(records(handled, group), d -> match.test(d.message()), timeout, what,
        d -> d.message().id());
  }

  /**
   * The dead letters of {@code group} (up to {@link DeadLetterQuery#MAX_LIMIT}).
   *
   * @param group the consumer group
   * @return its dead letters, as the store lists them
   */
  public List<DeadLetter> deadLetters(String group) {
    return deadLetters.list(new DeadLetterQuery(null, null, null, null,
        Objects.requireNonNull(group, "group"), null, null, 0, DeadLetterQuery.MAX_LIMIT));
  }

  /**
   * Waits until {@code group} has at least {@code count} dead letters.
   *
   * @param group the consumer group
   * @param count how many, {@code >= 1}
   * @param timeout the deadline
   * @return the group's dead letters
   * @throws AssertionError at the deadline, with how many there were
   */
  public List<DeadLetter> awaitDeadLetters(String group, int count, Duration timeout) {
    if (count < 1) {
      throw new IllegalArgumentException("count must be >= 1, was " + count);
    }
    try {
      Await.until(timeout, count + " dead letters of group " + group,
          () -> deadLetters(group).size() >= count);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "; it has " + deadLetters(group).size(), e);
    }
    return deadLetters(group);
  }

  /**
   * Waits until the outbox holds no unsent message (the relay published everything appended).
   *
   * @param timeout the deadline
   * @throws AssertionError at the deadline, with the backlog
   */
  public void awaitOutboxDrained(Duration timeout) {
    try {
      Await.until(timeout, "the outbox drained", () -> backlog().unsent() == 0);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "; still unsent: " + backlog().unsent()
          + " (is the relay running?)", e);
    }
  }

  /**
   * The outbox's numbers now (by {@link #clock()}).
   *
   * @return the outbox's numbers now (by {@link #clock()})
   */
  public OutboxStats backlog() {
    return outbox.stats(clock.instant());
  }

  /**
   * Makes the next {@code times} deliveries to {@code group}, of any message, fail with an {@link
   * InjectedFailure} before the group's handler runs (a retryable failure: the transport retries
   * by the subscription's policy, then dead-letters). Adds to a count set earlier.
   *
   * @param group the consumer group
   * @param times deliveries to fail, {@code >= 1}
   * @throws IllegalArgumentException if {@code times < 1}
   */
  public void failNext(String group, int times) {
    if (times < 1) {
      throw new IllegalArgumentException("times must be >= 1, was " + times);
    }
    failNext.computeIfAbsent(Objects.requireNonNull(group, "group"), g -> new AtomicInteger())
        .addAndGet(times);
  }

  /**
   * Forgets what was published and handled, cancels pending {@link #failNext} failures and deletes
   * every dead letter; the outbox is left as it is. For tests that share one instance (a Spring
   * context): {@code @RelaykitTest} calls it before each test.
   */
  public void clear() {
    published.clear();
    handled.clear();
    failNext.clear();
    DeadLetterQuery all = new DeadLetterQuery(null, null, null, null, null, null, null, 0,
        DeadLetterQuery.MAX_LIMIT);
    // Bounded: each round deletes up to a page; a store that deletes nothing ends the loop.
    for (int round = 0; round < 1_000 && deadLetters.purge(all) > 0; round++) {
      // next page
    }
  }

  private static <T> Records<T> records(Map<String, Records<T>> map, String name) {
    return map.computeIfAbsent(Objects.requireNonNull(name, "name"), n -> new Records<>());
  }

  private static <T> T awaitFirst(Records<T> records, Predicate<T> match, Duration timeout,
      String what, Function<T, String> id) {
    Object[] found = new Object[1];
    try {
      Await.until(timeout, what, () -> {
        found[0] = records.first(match);
        return found[0] != null;
      });
    } catch (AssertionError e) {
      List<String> seen = records.list().stream().map(id).toList();
      throw new AssertionError(e.getMessage() + "; seen " + seen.size() + ": "
          + (seen.size() > 20 ? seen.subList(0, 20) + " ..." : seen)
          + (records.dropped() > 0 ? " (" + records.dropped() + " more not kept: over "
          + MAX_RECORDS + ")" : ""), e);
    }
    @SuppressWarnings("unchecked")
    T t = (T) found[0];
    return t;
  }

  /** A bounded list: keeps the first {@link #MAX_RECORDS}, counts the rest. */
  private static final class Records<T> {
    private final List<T> items = new ArrayList<>();
    private long dropped;

    synchronized void add(T item) {
      if (items.size() < MAX_RECORDS) {
        items.add(item);
      } else {
        dropped++;
      }
    }

    synchronized List<T> list() {
      return List.copyOf(items);
    }

    synchronized T first(Predicate<T> match) {
      for (T t : items) {
        if (match.test(t)) {
          return t;
        }
      }
      return null;
    }

    synchronized long dropped() {
      return dropped;
    }
  }

  private final class RecordingPublisher implements Publisher {
    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      CompletableFuture<PublishReceipt> f = transport.publish(destination, message);
      // Recorded once the transport confirmed it: a refused publish is not "published".
      return f.whenComplete((receipt, failure) -> {
        if (failure == null) {
          records(published, destination).add(message);
        }
      });
    }

    @Override
    public String messagingSystem() {
      return transport.messagingSystem();
    }

    @Override
    public void close() {
      // The transport's owner closes it.
    }
  }

  private final class RecordingSubscriber implements Subscriber {
    @Override
    public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
      Objects.requireNonNull(handler, "handler");
      String group = spec.group();
      return transport.subscribe(spec, delivery -> {
        AtomicInteger failures = failNext.get(group);
        if (failures != null && failures.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
          throw new InjectedFailure("injected failure of a delivery to " + group + " (message "
              + delivery.message().id() + ", attempt " + delivery.attempt() + ")");
        }
        handler.handle(delivery);
        records(handled, group).add(delivery);
      });
    }

    @Override
    public String messagingSystem() {
      return transport.messagingSystem();
    }

    @Override
    public void close() {
      // The transport's owner closes it.
    }
  }
}

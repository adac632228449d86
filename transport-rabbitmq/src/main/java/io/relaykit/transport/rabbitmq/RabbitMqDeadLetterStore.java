package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.ShutdownSignalException;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterHeaders;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.PublishException;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.InstantSource;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link DeadLetterStore} view over one subscriber group's dead-letter queue ({@code
 * <destination>.<group>.dead}), plus {@link #replay} back to the group's queue.
 *
 * <p><b>Reads change nothing.</b> A queue cannot be searched or peeked, so every operation but
 * {@link #add} and an unfiltered {@link #purge} <em>browses</em> the whole queue: it takes each
 * message with {@code basic.get} without acking (one broker round trip each), acks the ones it
 * removes, and puts back a copy of each of the others (same headers, body, message id and
 * timestamp; publisher-confirmed) before it acks the original. Nothing is ever requeued, so a
 * read does not raise the quorum queue's {@code x-delivery-count} and no delivery limit can
 * delete a dead letter that was only looked at (older versions requeued on every read). If
 * putting a copy back fails, the browse channel closes and the broker requeues the originals
 * (the copies already made are twins of them: they share the transport's entry id and the next
 * browse keeps one of each). Costs O(depth) round trips and O(depth) confirmed publishes per call:
 * fine for an operator looking at hundreds or a few thousand dead letters, not for a hot path.
 * Filters, the order ({@link DeadLetterQuery#newestFirst}) and keyset positions ({@link
 * DeadLetterQuery#withAfter}) are applied in memory to the whole browse, so a keyset page deep
 * in the queue costs the same as the first: O(depth); {@link #countBySource} is one browse too.
 * While a browse runs, the messages it holds are invisible to other browsers, so a concurrent
 * {@link #find} may miss an entry that another caller is looking at; {@link #remove} still hands
 * an entry out at most once (only one channel can hold, and ack, a message).
 *
 * <p>A message the broker itself dead-lettered into this queue (the group queue's delivery limit,
 * see {@link RabbitMqTopology}) carries no relaykit failure headers: it is listed with reason
 * {@code "dead-lettered by RabbitMQ (<reason>) from <queue>"}.
 *
 * <p>{@link #add} publishes with a confirm, then removes older entries of the same id (a crash in
 * between leaves a twin, never a loss). Undecodable entries are listed with the envelope headers
 * they had, type {@code undecodable} when theirs is missing, and their original body (a single
 * zero byte stands in for an empty one). Thread-safe; one connection plus one publisher connection.
 *
 * <p><b>Retention.</b> The queue keeps dead letters until they are replayed or purged; relaykit
 * declares no TTL on it. Two ways to age them out, on different clocks:
 * <ul>
 *   <li>the broker's: a policy with {@code message-ttl} on the dead-letter queue expires each
 *       message that long after it entered the queue, by the broker's clock alone (no client clock
 *       takes part; a copy put back by a browse starts a new period);
 *   <li>a caller's: {@link #purgeFailedBefore} and {@link #purgeFailedOlderThan} (the interface's
 *       defaults, a filtered {@link #purge}: one browse of the queue) remove the entries whose last
 *       failure is before the cutoff. The last-failure time is the one the dead-lettering consumer
 *       stamped on its host's clock; {@code purgeFailedOlderThan} computes the cutoff on the
 *       caller's clock ({@code now} minus the age). The queue has no clock a client can read, so a
 *       skew between those hosts moves the cutoff by the skew; prefer the broker's policy when the
 *       hosts' clocks may disagree. {@link #trimTo} throws {@link UnsupportedOperationException}:
 *       a queue has no ordered, bounded delete.
 * </ul>
 */
public final class RabbitMqDeadLetterStore implements DeadLetterStore, AutoCloseable {

  private static final long CONFIRM_WAIT_SECONDS = 60;

  private final String destination;
  private final RabbitMqTopology.GroupQueues queues;
  private final Connection connection;
  private final RabbitMqPublisher publisher;
  private final LifecycleListener listener;
  private final InstantSource clock;
  /** The group subscription's mapping: reads what the broker dead-lettered without an envelope. */
  private final InboundMapping inbound;

  private RabbitMqDeadLetterStore(String destination, RabbitMqTopology.GroupQueues queues,
      Connection connection, RabbitMqPublisher publisher, LifecycleListener listener,
      InstantSource clock, InboundMapping inbound) {
    this.destination = destination;
    this.queues = queues;
    this.connection = connection;
    this.publisher = publisher;
    this.listener = listener;
    this.clock = clock;
    this.inbound = inbound;
  }

  /**
   * A view over the dead-letter queue of {@code group} on {@code destination}; declares the
   * group's topology (idempotent) so that replay has somewhere to go.
   *
   * @param config the broker and topology settings
   * @param destination the destination the group consumes
   * @param group the subscriber group whose dead letters this view reads
   * @return the view, connected
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   * @throws TopologyConflictException if a queue exists with other arguments
   */
  public static RabbitMqDeadLetterStore create(RabbitMqTransportConfig config, String destination,
      String group) {
    return create(config, destination, group, LifecycleListener.noop(), InstantSource.system());
  }

  /**
   * Like {@link #create(RabbitMqTransportConfig, String, String)}, reporting REPLAYED events.
   *
   * @param config the broker and topology settings
   * @param destination the destination the group consumes
   * @param group the subscriber group whose dead letters this view reads
   * @param listener receives the REPLAYED events
   * @param clock dates the events
   * @return the view, connected
   */
  public static RabbitMqDeadLetterStore create(RabbitMqTransportConfig config, String destination,
      String group, LifecycleListener listener, InstantSource clock) {
    return create(config, destination, group, InboundMapping.standard(), listener, clock);
  }

  /**
   * Like {@link #create(RabbitMqTransportConfig, String, String, LifecycleListener,
   * InstantSource)}, reading a message that RabbitMQ itself dead-lettered (its {@code
   * x-delivery-limit} reached: a consumer that crashed on it again and again) and that carries no
   * relaykit envelope with {@code inbound}, the mapping of the group's subscription, so that the
   * dead letter lists the id and key the handler saw (a CloudEvent's {@code (source, id)}
   * identity, a named id header's value, the content hash of a plain message without a message
   * id). The other constructors use {@link InboundMapping#standard()}, the subscriptions' default.
   *
   * @param config the broker and topology settings
   * @param destination the destination the group consumes
   * @param group the subscriber group whose dead letters this view reads
   * @param inbound the group subscription's inbound mapping
   * @param listener receives the REPLAYED events
   * @param clock dates the events
   * @return the view, connected
   * @throws IllegalArgumentException if an argument is null
   */
  public static RabbitMqDeadLetterStore create(RabbitMqTransportConfig config, String destination,
      String group, InboundMapping inbound, LifecycleListener listener, InstantSource clock) {
    RabbitMqClientVersion.check();
    if (config == null || listener == null || clock == null || inbound == null) {
      throw new IllegalArgumentException("config, inbound, listener and clock must not be null");
    }
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    RabbitMqTopology.GroupQueues queues = topology.queues(destination, group);
    Connection connection;
    try {
      connection = Connections.open(config, "dead-letters", true);
    } catch (IOException e) {
      throw new UncheckedIOException(e.getMessage(), e);
    }
    try {
      topology.declare(connection, destination, group);
    } catch (IOException | RuntimeException e) {
      abort(connection);
      if (e instanceof RuntimeException) {
        throw (RuntimeException) e;
      }
      throw new UncheckedIOException(e.getMessage(), (IOException) e);
    }
    RabbitMqPublisher publisher;
    try {
      publisher = RabbitMqPublisher.create(config, LifecycleListener.noop(), clock,
          "dead-letter-publisher");
    } catch (RuntimeException e) {
      abort(connection);
      throw e;
    }
    return new RabbitMqDeadLetterStore(destination, queues, connection, publisher, listener,
        clock, inbound);
  }

  /**
   * The dead-letter queue this view reads.
   *
   * @return the queue's name
   */
  public String queue() {
    return queues.deadLetterQueue();
  }

  @Override
  public void add(DeadLetter deadLetter) {
    if (deadLetter == null) {
      throw new IllegalArgumentException("deadLetter must not be null");
    }
    String entry = UUID.randomUUID().toString();
    Map<String, String> headers = encode(deadLetter, entry);
    confirm(publisher.publishToQueue(queues.deadLetterQueue(), headers,
        deadLetter.message().payload()), "add dead letter " + deadLetter.id());
    browse(entries -> {
      for (Entry e : entries) {
        if (e.deadLetter.id().equals(deadLetter.id()) && !entry.equals(e.entryId)) {
          e.ack();
        }
      }
      return null;
    });
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    requireId(id);
    return browse(entries -> newest(entries, id).map(e -> e.deadLetter));
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    requireQuery(query);
    return browse(entries -> {
      List<DeadLetter> matching = matching(entries, query);
      if (query.after() != null) {
        matching = matching.stream().filter(query::isAfterPosition).toList();
      }
      int from = Math.min(query.offset(), matching.size());
      int to = (int) Math.min((long) from + query.limit(), matching.size());
      return new ArrayList<>(matching.subList(from, to));
    });
  }

  /**
   * One browse of the queue, tallied in memory (the newest entry of each id, as listing shows):
   * O(depth) round trips, O(depth) memory.
   */
  @Override
  public List<io.relaykit.deadletter.DeadLetterCount> countBySource(int maxRows) {
    if (maxRows < 1 || maxRows > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(
          "maxRows must be in 1.." + DeadLetterQuery.MAX_LIMIT + ", was " + maxRows);
    }
    return browse(entries -> {
      io.relaykit.deadletter.InMemoryDeadLetterStore tally =
          new io.relaykit.deadletter.InMemoryDeadLetterStore();
      for (DeadLetter d : matching(entries, DeadLetterQuery.all())) {
        tally.add(d);
      }
      return tally.countBySource(maxRows);
    });
  }

  @Override
  public long count(DeadLetterQuery query) {
    requireQuery(query);
    return browse(entries -> (long) matching(entries, query).size());
  }

  /** Acks every entry with {@code id} and returns the newest; at most once under concurrency. */
  @Override
  public Optional<DeadLetter> remove(String id) {
    requireId(id);
    return browse(entries -> {
      Optional<Entry> newest = newest(entries, id);
      for (Entry e : entries) {
        if (e.deadLetter.id().equals(id)) {
          e.ack();
        }
      }
      return newest.map(e -> e.deadLetter);
    });
  }

  /** Without filters a single {@code queue.purge}; with filters a browse that acks the matches. */
  @Override
  public long purge(DeadLetterQuery query) {
    requireQuery(query);
    if (query.reasonContains() == null && query.type() == null && query.source() == null
        && query.failedFrom() == null && query.failedBefore() == null) {
      try (Channel ch = connection.createChannel()) {
        return ch.queuePurge(queues.deadLetterQueue()).getMessageCount();
      } catch (IOException | TimeoutException e) {
        throw new UncheckedIOException(new IOException("purge of " + queues.deadLetterQueue()
            + " failed: " + e.getMessage(), e));
      }
    }
    return browse(entries -> {
      long n = 0;
      for (Entry e : entries) {
        if (query.matches(e.deadLetter)) {
          e.ack();
          n++;
        }
      }
      return n;
    });
  }

  /**
   * Sends the dead letter with {@code id} back to this group's queue (not to the destination's
   * exchange: the other groups already handled it) with a fresh attempt count, then removes it
   * from the dead-letter queue.
   * The resend is confirmed before the removal, so a failure leaves the dead letter in place; a
   * crash between the two may replay it twice (consumers dedupe by id).
   *
   * @param id the dead letter's id, as {@link DeadLetter#id()} gives it
   * @return the replayed dead letter, or empty if there was none with that id
   * @throws PublishException if the resend was not confirmed; the dead letter stays
   */
  public Optional<DeadLetter> replay(String id) {
    requireId(id);
    Optional<DeadLetter> replayed = browse(entries -> {
      Optional<Entry> newest = newest(entries, id);
      if (newest.isEmpty()) {
        return Optional.empty();
      }
      DeadLetter d = newest.get().deadLetter;
      Map<String, String> wire = MessageHeaders.toWire(d.message());
      d.message().key().ifPresent(k -> wire.put(AmqpHeaders.KEY, k));
      confirm(publisher.publishToQueue(queues.queue(), wire, d.message().payload()),
          "replay of dead letter " + id + " to " + queues.queue());
      for (Entry e : entries) {
        if (e.deadLetter.id().equals(id)) {
          e.ack();
        }
      }
      return Optional.of(d);
    });
    replayed.ifPresent(d -> LifecycleListener.safely(listener, new LifecycleEvent(
        LifecycleEvent.Stage.REPLAYED, d.id(), d.message().traceId(), destination,
        clock.instant(), "replayed from " + queues.deadLetterQueue() + " to " + queues.queue())));
    return replayed;
  }

  @Override
  public void close() {
    publisher.close();
    try {
      if (connection.isOpen()) {
        connection.close(5_000);
      }
    } catch (IOException | ShutdownSignalException e) {
      // closing anyway
    }
  }

  private static List<DeadLetter> matching(List<Entry> entries, DeadLetterQuery query) {
    List<DeadLetter> out = new ArrayList<>();
    for (Entry e : entries) {
      if (query.matches(e.deadLetter)) {
        out.add(e.deadLetter);
      }
    }
    Comparator<DeadLetter> order =
        Comparator.comparing(DeadLetter::lastFailureAt).thenComparing(DeadLetter::id);
    out.sort(query.newestFirst() ? order.reversed() : order);
    return out;
  }

  private static Optional<Entry> newest(List<Entry> entries, String id) {
    Entry found = null;
    for (Entry e : entries) {
      if (e.deadLetter.id().equals(id) && (found == null
          || !e.deadLetter.lastFailureAt().isBefore(found.deadLetter.lastFailureAt()))) {
        found = e;
      }
    }
    return Optional.ofNullable(found);
  }

  private interface Browse<T> {
    T apply(List<Entry> entries) throws IOException;
  }

  /**
   * Takes every ready message without acking, lets {@code action} ack some, then keeps the rest
   * by copy (see the class comment): never requeues, so reads leave delivery counts alone.
   */
  private <T> T browse(Browse<T> action) {
    Channel ch = null;
    try {
      ch = connection.createChannel();
      if (ch == null) {
        throw new IOException("no channel available");
      }
      List<Entry> entries = new ArrayList<>();
      Set<String> entryIds = new HashSet<>();
      GetResponse r;
      while ((r = ch.basicGet(queues.deadLetterQueue(), false)) != null) {
        Entry e = new Entry(ch, r.getEnvelope().getDeliveryTag(), r);
        if (e.entryId != null && !entryIds.add(e.entryId)) {
          e.ack(); // a twin left by a browse that failed while putting copies back
        } else {
          entries.add(e);
        }
      }
      T result = action.apply(entries);
      keep(entries);
      return result;
    } catch (IOException e) {
      throw new UncheckedIOException(new IOException("browsing " + queues.deadLetterQueue()
          + " failed: " + e.getMessage(), e));
    } finally {
      if (ch != null && ch.isOpen()) {
        try {
          ch.close();
        } catch (IOException | TimeoutException | ShutdownSignalException e) {
          abortQuietly(ch);
        }
      }
    }
  }

  /** Puts a confirmed copy of every entry not acked back, then acks the originals. */
  private void keep(List<Entry> entries) throws IOException {
    List<Entry> kept = new ArrayList<>();
    List<CompletableFuture<?>> copies = new ArrayList<>();
    for (Entry e : entries) {
      if (!e.acked) {
        kept.add(e);
        copies.add(publisher.publishToQueue(queues.deadLetterQueue(), e.copyHeaders(),
            e.copyBody, e.deadLetter.messageId(), e.timestampMillis));
      }
    }
    for (CompletableFuture<?> f : copies) {
      confirm(f, "putting a dead letter back into " + queues.deadLetterQueue());
    }
    for (Entry e : kept) {
      e.ack();
    }
  }

  private static void abortQuietly(Channel ch) {
    try {
      ch.abort();
    } catch (IOException e) {
      // the broker requeues on connection loss as well
    }
  }

  private static void abort(Connection c) {
    c.abort();
  }

  private static void confirm(java.util.concurrent.CompletableFuture<?> f, String what) {
    try {
      f.get(CONFIRM_WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new PublishException(what + " failed: " + cause, cause);
    } catch (TimeoutException e) {
      throw new PublishException(what + " was not confirmed within " + CONFIRM_WAIT_SECONDS
          + " s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PublishException(what + " was interrupted", e);
    }
  }

  private static Map<String, String> encode(DeadLetter d, String entry) {
    Map<String, String> h = DeadLetterHeaders.toWire(d);
    d.message().key().ifPresent(k -> h.put(AmqpHeaders.KEY, k));
    h.put(AmqpHeaders.DEAD_ENTRY, entry);
    return h;
  }

  /** Decodes a dead-letter queue message; lenient, since undecodable messages end up here too. */
  private DeadLetter decode(GetResponse r, Map<String, String> wire, Message mapped) {
    Message message = mapped;
    if (message == null) {
      try {
        message = MessageHeaders.fromWire(wire, wire.get(AmqpHeaders.KEY), r.getBody());
      } catch (MalformedMessageException | IllegalArgumentException e) {
        message = lenientMessage(wire, r);
      }
    }
    Instant published = r.getProps().getTimestamp() != null
        ? r.getProps().getTimestamp().toInstant() : Instant.EPOCH;
    return DeadLetterHeaders.fromWire(message, wire, destination, published);
  }

  /**
   * A message without relaykit's envelope (RabbitMQ dead-lettered it before any relaykit copy),
   * read exactly as the subscription read it: the same headers, content type, position and key
   * (the routing key it was published with, from the broker's x-death record), through the
   * group's mapping; null when the mapping refuses it (the lenient reading takes over).
   */
  private Message foreign(GetResponse r) {
    if (!inbound.acceptsForeign()) {
      return null;
    }
    com.rabbitmq.client.AMQP.BasicProperties props = r.getProps();
    Set<String> invalid = new HashSet<>();
    Map<String, String> wire;
    try {
      wire = AmqpHeaders.stringsLenient(props, invalid);
    } catch (MalformedMessageException e) {
      return null; // relaykit's envelope, broken: the lenient reading takes over
    }
    if (wire.containsKey(MessageHeaders.ID)) {
      return null;
    }
    if (props.getContentType() != null && !props.getContentType().isBlank()) {
      wire.putIfAbsent(CloudEvents.CONTENT_TYPE, props.getContentType());
    }
    try {
      return inbound.decode(wire, r.getBody(), new InboundMapping.Inbound(destination,
          AmqpHeaders.stablePosition(destination, props, wire, r.getBody()),
          AmqpHeaders.deadLetteredKey(props), props.getTimestamp() == null ? null
          : props.getTimestamp().toInstant(), clock.instant(), invalid,
          InboundMapping.AMQP_CLOUDEVENTS_PREFIX)).message();
    } catch (MalformedMessageException | IllegalArgumentException e) {
      return null;
    }
  }

  /**
   * A stand-in for a dead letter nobody can read. Its id is its relaykit id, else its message-id
   * property, else {@code undecodable-} and its content digest ({@link
   * AmqpHeaders#stablePosition}): the same in every read, so a remove or replay by an id listed
   * earlier finds the same entry (a delivery tag, numbered per browse, would pass to another).
   * Byte-identical messages without any id share one.
   */
  private Message lenientMessage(Map<String, String> wire, GetResponse r) {
    String id = wire.get(MessageHeaders.ID);
    if (id == null || id.isBlank()) {
      com.rabbitmq.client.AMQP.BasicProperties props = r.getProps();
      id = props.getMessageId() != null && !props.getMessageId().isBlank()
          ? props.getMessageId() : "undecodable-" + AmqpHeaders.stablePosition(destination,
              props, wire, r.getBody());
    }
    String type = wire.get(MessageHeaders.TYPE);
    Map<String, String> user = new LinkedHashMap<>();
    wire.forEach((k, v) -> {
      if (!MessageHeaders.isReserved(k) && !k.isBlank()) {
        user.put(k, v);
      }
    });
    byte[] body = r.getBody() == null || r.getBody().length == 0 ? new byte[] {0} : r.getBody();
    Message.Builder b = Message.builder().id(id)
        .type(type == null || type.isBlank() ? "undecodable" : type)
        .payload(body).headers(user);
    String trace = wire.get(MessageHeaders.TRACE_ID);
    if (trace != null && !trace.isBlank()) {
      b.traceId(trace);
    }
    Instant created = instant(wire.get(MessageHeaders.CREATED_AT));
    if (created != null) {
      b.createdAt(created);
    }
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      return Message.builder().id(id).type("undecodable").payload(body).build();
    }
  }

  private static Instant instant(String s) {
    if (s == null) {
      return null;
    }
    try {
      return Instant.parse(s);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static void requireId(String id) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("id must not be blank, was " + id);
    }
  }

  private static void requireQuery(DeadLetterQuery query) {
    if (query == null) {
      throw new IllegalArgumentException("query must not be null");
    }
  }

  /** One browsed message: held unacked on the browse channel until acked or copied back. */
  private final class Entry {
    final Channel channel;
    final long tag;
    final Map<String, String> raw;
    final byte[] body;
    /** The body of the copy that replaces this entry: see {@link #copyHeaders()}. */
    final byte[] copyBody;
    final long timestampMillis;
    final DeadLetter deadLetter;
    final String entryId;
    boolean acked;

    Entry(Channel channel, long tag, GetResponse r) {
      this.channel = channel;
      this.tag = tag;
      this.raw = rawHeaders(r);
      this.body = r.getBody();
      this.timestampMillis = r.getProps().getTimestamp() != null
          ? r.getProps().getTimestamp().getTime() : clock.millis();
      Message mapped = raw.containsKey(MessageHeaders.ID) ? null : foreign(r);
      this.deadLetter = decode(r, raw, mapped);
      // The copy of what the group's mapping read carries the payload the handler saw (a
      // structured CloudEvent's data, not the JSON event around it), since it gets an envelope.
      this.copyBody = mapped == null ? body : mapped.payload();
      this.entryId = raw.get(AmqpHeaders.DEAD_ENTRY);
    }

    void ack() throws IOException {
      channel.basicAck(tag, false);
      acked = true;
    }

    /** The headers of the copy that replaces this entry: the same, with an entry id for sure. */
    Map<String, String> copyHeaders() {
      Map<String, String> h = new LinkedHashMap<>(raw);
      if (!raw.containsKey(MessageHeaders.ID)) {
        // What RabbitMQ dead-lettered without an envelope: the copy carries the one it was read
        // with (id, key, type, trace), since the broker's x-death record does not survive it.
        h.putAll(MessageHeaders.toWire(deadLetter.message()));
        deadLetter.message().key().ifPresent(k -> h.put(AmqpHeaders.KEY, k));
      }
      h.putIfAbsent(AmqpHeaders.DEAD_ENTRY, UUID.randomUUID().toString());
      h.putIfAbsent(MessageHeaders.ID, deadLetter.messageId());
      return h;
    }
  }

  /**
   * The string headers of a dead-letter queue message without the transport's publish sequence
   * and the broker's own headers, in their original order where they are decodable. A message the
   * broker dead-lettered gets its reason from the broker's death headers.
   */
  private static Map<String, String> rawHeaders(GetResponse r) {
    Map<String, String> wire;
    try {
      wire = AmqpHeaders.strings(r.getProps());
    } catch (MalformedMessageException e) {
      wire = new LinkedHashMap<>();
      for (Map.Entry<String, Object> h : r.getProps().getHeaders().entrySet()) {
        if (!h.getKey().equals(AmqpHeaders.PUBLISH_SEQ) && !AmqpHeaders.isBrokerHeader(h.getKey())
            && h.getValue() != null) {
          wire.put(h.getKey(), AmqpHeaders.string(h.getValue()));
        }
      }
    }
    Map<String, Object> all = r.getProps().getHeaders();
    if (!wire.containsKey(MessageHeaders.DEAD_REASON) && all != null
        && all.get("x-first-death-reason") != null) {
      wire.put(MessageHeaders.DEAD_REASON, "dead-lettered by RabbitMQ ("
          + all.get("x-first-death-reason") + ") from " + all.get("x-first-death-queue"));
    }
    return wire;
  }
}

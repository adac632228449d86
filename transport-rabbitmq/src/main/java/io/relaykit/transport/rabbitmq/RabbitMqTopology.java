package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * Names and declares the exchanges and queues of the RabbitMQ transport. A destination is a
 * durable fanout exchange; each subscriber group owns a durable quorum queue bound to it, so the
 * members of a group compete for messages (a work queue is a destination with one group) and every
 * group sees every message (pub/sub). Each group queue has one delay queue per configured delay
 * level and one dead-letter queue:
 *
 * <pre>
 *  publish ──▶ [exchange: orders] ──fanout──▶ (orders.billing)  ◀── competing consumers
 *                                   └───────▶ (orders.audit)
 *  failure ──▶ (orders.billing.retry-1000ms) ──TTL, dead-letter via "" ──▶ (orders.billing)
 *          ──▶ (orders.billing.retry-10000ms) ─────────────── " ─────────▶ (orders.billing)
 *  give up ──▶ (orders.billing.dead)
 * </pre>
 *
 * <p><b>Delivery limits.</b> Every group queue and dead-letter queue is declared with an explicit
 * {@code x-delivery-limit}, so the broker's default (none on 3.x, 20 on 4.0+) never decides: the
 * group queue's is {@value #DELIVERY_LIMIT} and dead-letters at-least-once into the group's
 * dead-letter queue ({@code x-dead-letter-exchange ""}, routing key the dead-letter queue): a
 * message redelivered that often (consumers that crash on it, closes that leave it unfinished)
 * becomes a dead letter instead of being dropped or looping. The dead-letter queue's is {@value
 * #DEAD_LETTER_DELIVERY_LIMIT} with no target after it; relaykit's reads never requeue (see
 * {@link RabbitMqDeadLetterStore}), so only failed browses count toward it. Delay queues are never
 * consumed (their messages expire into the group queue), so no limit applies to them.
 *
 * <p>Declaration is idempotent. An existing entity with other arguments fails with a {@link
 * TopologyConflictException} that names it; nothing is changed. A group or dead-letter queue
 * declared by relaykit before these limits existed conflicts that way (RabbitMQ refuses to change
 * a queue's arguments: 406 PRECONDITION_FAILED); the exception's message gives the migration
 * steps. Each declaration costs one broker round trip per entity (2 + delay levels queues, 1
 * binding).
 */
public final class RabbitMqTopology {

  static final String QUEUE_TYPE = "x-queue-type";
  /** Deliveries of one message from a group queue before the broker dead-letters it. */
  public static final int DELIVERY_LIMIT = 50;
  /** Deliveries of one message from a dead-letter queue before the broker drops it. */
  public static final int DEAD_LETTER_DELIVERY_LIMIT = 10_000;
  private static final Pattern DESTINATION = Pattern.compile("[A-Za-z0-9._:-]+");
  private static final Pattern GROUP = Pattern.compile("[A-Za-z0-9_:-]+");

  private final RabbitMqTransportConfig config;

  private RabbitMqTopology(RabbitMqTransportConfig config) {
    this.config = config;
  }

  /**
   * The topology that {@code config}'s name prefix and delay levels describe.
   *
   * @param config the name prefix and delay levels
   * @return the topology; it declares nothing until asked
   */
  public static RabbitMqTopology of(RabbitMqTransportConfig config) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new RabbitMqTopology(config);
  }

  /**
   * The names of one subscriber group's queues.
   *
   * @param exchange the destination's exchange
   * @param queue the group's work queue
   * @param retryQueues the delay queue of each delay level, ascending
   * @param deadLetterQueue the group's dead-letter queue
   */
  public record GroupQueues(
      String exchange, String queue, Map<Duration, String> retryQueues, String deadLetterQueue) {
    /**
     * Copies the retry queues, keeping their order.
     *
     * @param exchange the destination's exchange
     * @param queue the group's work queue
     * @param retryQueues the delay queue of each delay level, ascending
     * @param deadLetterQueue the group's dead-letter queue
     */
    public GroupQueues {
      retryQueues = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(retryQueues));
    }

    /**
     * Every queue, work queue first.
     *
     * @return the work queue, the retry queues ascending, then the dead-letter queue
     */
    public List<String> allQueues() {
      List<String> all = new java.util.ArrayList<>();
      all.add(queue);
      all.addAll(retryQueues.values());
      all.add(deadLetterQueue);
      return all;
    }
  }

  /**
   * The exchange a destination publishes to.
   *
   * @param destination the destination's name
   * @return the exchange's name
   * @throws IllegalArgumentException if the destination is blank, holds characters other than
   *     letters, digits and {@code . _ : -}, or makes a name longer than 255 characters
   */
  public String exchange(String destination) {
    checkDestination(destination);
    return checkLength(config.namePrefix() + destination);
  }

  /**
   * The queue names of {@code group} on {@code destination}.
   *
   * @param destination the destination's name
   * @param group the subscriber group
   * @return the group's queue names
   * @throws IllegalArgumentException if a name is invalid as for {@link #exchange}; a group may
   *     not contain dots
   */
  public GroupQueues queues(String destination, String group) {
    String exchange = exchange(destination);
    if (group == null || !GROUP.matcher(group).matches()) {
      throw new IllegalArgumentException(
          "group may hold only letters, digits and _ : -, was " + group);
    }
    String queue = exchange + "." + group;
    Map<Duration, String> retry = new LinkedHashMap<>();
    for (Duration level : config.delayLevels()) {
      retry.put(level, checkLength(queue + ".retry-" + level.toMillis() + "ms"));
    }
    return new GroupQueues(exchange, checkLength(queue), retry,
        checkLength(queue + ".dead"));
  }

  /**
   * The delay level a retry after {@code delay} waits in: the smallest level not shorter than
   * {@code delay}, or the largest level when {@code delay} exceeds every level. A retry therefore
   * never comes earlier than the policy asked, unless the policy asks for more than the largest
   * level.
   *
   * @param delay the delay the retry policy asked for
   * @return one of the configured delay levels
   */
  public Duration levelFor(Duration delay) {
    List<Duration> levels = config.delayLevels();
    for (Duration level : levels) {
      if (level.compareTo(delay) >= 0) {
        return level;
      }
    }
    return levels.get(levels.size() - 1);
  }

  /**
   * Declares the destination's exchange. Idempotent.
   *
   * @param connection an open broker connection
   * @param destination the destination's name
   * @return the exchange's name
   * @throws TopologyConflictException if it exists with another type or other flags
   * @throws IOException if the broker could not be reached
   */
  public String declareExchange(Connection connection, String destination) throws IOException {
    String exchange = exchange(destination);
    try (Declarer d = new Declarer(connection)) {
      d.exchange(exchange);
    }
    return exchange;
  }

  /**
   * Declares the destination's exchange and every queue of {@code group}, and binds the group's
   * queue to the exchange. Idempotent.
   *
   * @param connection an open broker connection
   * @param destination the destination's name
   * @param group the subscriber group
   * @return the group's queue names
   * @throws TopologyConflictException naming the entity that exists with other arguments
   * @throws IOException if the broker could not be reached
   */
  public GroupQueues declare(Connection connection, String destination, String group)
      throws IOException {
    GroupQueues q = queues(destination, group);
    try (Declarer d = new Declarer(connection)) {
      d.exchange(q.exchange());
      d.queue(q.queue(), groupQueueArguments(q), migration(q.queue()));
      d.bind(q.queue(), q.exchange());
      for (Map.Entry<Duration, String> retry : q.retryQueues().entrySet()) {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put(QUEUE_TYPE, "quorum");
        args.put("x-message-ttl", retry.getKey().toMillis());
        // Expired messages go back to this group's queue only, through the default exchange.
        args.put("x-dead-letter-exchange", "");
        args.put("x-dead-letter-routing-key", q.queue());
        // Quorum queues dead-letter at-least-once only with reject-publish overflow (3.10+).
        args.put("x-dead-letter-strategy", "at-least-once");
        args.put("x-overflow", "reject-publish");
        d.queue(retry.getValue(), args, null);
      }
      d.queue(q.deadLetterQueue(), deadLetterQueueArguments(), migration(q.deadLetterQueue()));
    }
    return q;
  }

  /** The arguments of a group queue: quorum, delivery limit, dead letters to the group's DLQ. */
  static Map<String, Object> groupQueueArguments(GroupQueues q) {
    Map<String, Object> args = new LinkedHashMap<>();
    args.put(QUEUE_TYPE, "quorum");
    args.put("x-delivery-limit", DELIVERY_LIMIT);
    args.put("x-dead-letter-exchange", "");
    args.put("x-dead-letter-routing-key", q.deadLetterQueue());
    args.put("x-dead-letter-strategy", "at-least-once");
    args.put("x-overflow", "reject-publish");
    return args;
  }

  /** The arguments of a dead-letter queue: quorum with an explicit, high delivery limit. */
  static Map<String, Object> deadLetterQueueArguments() {
    Map<String, Object> args = new LinkedHashMap<>();
    args.put(QUEUE_TYPE, "quorum");
    args.put("x-delivery-limit", DEAD_LETTER_DELIVERY_LIMIT);
    return args;
  }

  private static String migration(String queue) {
    return "If it was declared by a relaykit version without explicit delivery limits, migrate"
        + " it: stop this group's subscribers; move its messages to a temporary queue (for"
        + " example with a shovel: rabbitmqctl set_parameter shovel migrate-" + queue
        + " '{\"src-queue\":\"" + queue + "\",\"dest-queue\":\"" + queue + ".migrating\","
        + "\"src-delete-after\":\"queue-length\"}' with src-uri/dest-uri of the broker); delete"
        + " it (rabbitmqctl delete_queue " + queue + "); start this version, which declares it"
        + " with the new arguments; then shovel the messages back from " + queue
        + ".migrating and delete that queue.";
  }

  /**
   * Deletes the group's queues (with their messages), and the exchange when {@code withExchange}.
   * For tests and decommissioning; a missing entity is not an error.
   *
   * @param connection an open broker connection
   * @param destination the destination's name
   * @param group the subscriber group
   * @param withExchange whether to delete the destination's exchange too
   * @throws IOException if the broker could not be reached
   */
  public void delete(Connection connection, String destination, String group,
      boolean withExchange) throws IOException {
    GroupQueues q = queues(destination, group);
    try (Declarer d = new Declarer(connection)) {
      for (String queue : q.allQueues()) {
        d.channel().queueDelete(queue);
      }
      if (withExchange) {
        d.channel().exchangeDelete(q.exchange());
      }
    }
  }

  private static void checkDestination(String destination) {
    if (destination == null || !DESTINATION.matcher(destination).matches()) {
      throw new IllegalArgumentException(
          "destination may hold only letters, digits and . _ : -, was " + destination);
    }
    if (destination.startsWith("amq.")) {
      throw new IllegalArgumentException(
          "destination must not start with amq. (reserved by RabbitMQ), was " + destination);
    }
  }

  private static String checkLength(String name) {
    if (name.length() > RabbitMqTransportConfig.MAX_NAME_LENGTH) {
      throw new IllegalArgumentException("name " + name + " is longer than "
          + RabbitMqTransportConfig.MAX_NAME_LENGTH + " characters (" + name.length() + ")");
    }
    return name;
  }

  /**
   * Declares on its own channel, because a PRECONDITION_FAILED reply closes the channel it came
   * on: the error is turned into a {@link TopologyConflictException} and the channel is discarded.
   */
  private static final class Declarer implements AutoCloseable {
    private final Channel channel;

    Declarer(Connection connection) throws IOException {
      this.channel = connection.createChannel();
      if (channel == null) {
        throw new IOException("no channel available on " + connection);
      }
    }

    Channel channel() {
      return channel;
    }

    void exchange(String name) throws IOException {
      try {
        channel.exchangeDeclare(name, BuiltinExchangeType.FANOUT, true, false, false, null);
      } catch (IOException e) {
        throwIfConflict("exchange", name, "a durable fanout exchange", e, null);
        throw e;
      }
    }

    void queue(String name, Map<String, Object> args, String migration) throws IOException {
      try {
        channel.queueDeclare(name, true, false, false, args);
      } catch (IOException e) {
        throwIfConflict("queue", name, "a durable queue with arguments " + args, e, migration);
        throw e;
      }
    }

    void bind(String queue, String exchange) throws IOException {
      channel.queueBind(queue, exchange, "");
    }

    private static void throwIfConflict(String kind, String name, String expected,
        IOException e, String migration) {
      String brokerText = preconditionFailure(e);
      if (brokerText != null) {
        throw new TopologyConflictException(kind + " '" + name + "' already exists with other "
            + "properties than relaykit declares (" + expected + "); broker said: " + brokerText
            + ". Delete it or choose another name."
            + (migration == null ? "" : " " + migration), e);
      }
    }

    @Override
    public void close() throws IOException {
      if (channel.isOpen()) {
        try {
          channel.close();
        } catch (TimeoutException | ShutdownSignalException e) {
          channel.abort();
        }
      }
    }
  }

  /** The broker's reply text when {@code e} is a channel closed with PRECONDITION_FAILED. */
  static String preconditionFailure(Exception e) {
    Throwable t = e;
    while (t != null) {
      if (t instanceof ShutdownSignalException) {
        Object reason = ((ShutdownSignalException) t).getReason();
        if (reason instanceof AMQP.Channel.Close) {
          AMQP.Channel.Close close = (AMQP.Channel.Close) reason;
          if (close.getReplyCode() == AMQP.PRECONDITION_FAILED) {
            return close.getReplyText();
          }
        }
        return null;
      }
      t = t.getCause();
    }
    return null;
  }
}

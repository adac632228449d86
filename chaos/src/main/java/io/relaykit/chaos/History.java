package io.relaykit.chaos;

import java.util.List;
import java.util.Set;

/**
 * Everything a chaos run recorded and found, as plain values, so the {@link Checker} can be tested
 * on hand-built histories: the client's log of requests and answers, the status documents it saw,
 * what the database held after the run, the metrics samples and the fault windows.
 *
 * @param requests every POST /orders the client sent, with its answer
 * @param statuses every status document the client read
 * @param orders the demo_orders rows
 * @param effects per (order, effect) how many demo_effects rows exist
 * @param deadLetters the dead_letter rows
 * @param doneDedupeKeys idempotency keys whose row is DONE
 * @param outboxUnsent outbox rows still unsent after the settle phase
 * @param samples the metrics samples, one a second
 * @param faults the fault windows, as injected
 * @param poisonSku the SKU the demo fails permanently
 */
public record History(
    List<Request> requests,
    List<StatusSeen> statuses,
    List<DbOrder> orders,
    List<DbEffect> effects,
    List<DbDeadLetter> deadLetters,
    Set<String> doneDedupeKeys,
    long outboxUnsent,
    List<Sample> samples,
    List<FaultWindow> faults,
    String poisonSku) {

  public History {
    requests = List.copyOf(requests);
    statuses = List.copyOf(statuses);
    orders = List.copyOf(orders);
    effects = List.copyOf(effects);
    deadLetters = List.copyOf(deadLetters);
    doneDedupeKeys = Set.copyOf(doneDedupeKeys);
    samples = List.copyOf(samples);
    faults = List.copyOf(faults);
  }

  /**
   * One POST /orders: when it started (ms since the run began), the key and body, which instance,
   * the HTTP status (-1: no answer, the connection failed or timed out), the order id of a 202.
   *
   * @param kind {@code first}, {@code retry} (no answer or a retryable one before) or {@code
   *     repeat} (a deliberate resend after a 202)
   */
  public record Request(long atMs, String key, String sku, int qty, String kind, int instance,
      int status, String orderId, long tookMs, String error) {}

  /** One status document read: the request's start and end (ms), the order and its status. */
  public record StatusSeen(long startMs, long endMs, String orderId, String status) {}

  /** A demo_orders row. */
  public record DbOrder(String id, String idempotencyKey, String sku) {}

  /** How many demo_effects rows one (order, effect) has. */
  public record DbEffect(String orderId, String effect, int count) {}

  /** A dead_letter row: its id, the message id ({@code order:effect}), its key (the order). */
  public record DbDeadLetter(String id, String messageId, String orderId, String group) {}

  /**
   * A metrics sample: when its answer arrived (ms since start, monotonic), orders accepted so far
   * (client, read when the answer arrived), orders completed (the demo's whole-table count),
   * outbox backlog and oldest pending age, -1 when no instance answered; and when it was asked
   * for. The reading was taken somewhere between {@code askedMs} and {@code atMs}.
   */
  public record Sample(long atMs, long accepted, long completed, long backlog,
      long oldestPendingMs, long askedMs) {

    /** A sample read at one instant: asked and answered at {@code atMs}. */
    public Sample(long atMs, long accepted, long completed, long backlog, long oldestPendingMs) {
      this(atMs, accepted, completed, backlog, oldestPendingMs, atMs);
    }
  }

  /**
   * One injected fault: its kind ({@code kill}, {@code partition}, ...), target, partition mode
   * (empty for other kinds), detail, and the window in ms since start (for a kill: from the kill
   * until the instance listens again).
   */
  public record FaultWindow(String fault, String target, String mode, String detail,
      long startMs, long endMs) {
    /**
     * What the fault was, in words: {@code kill of instance 0}, {@code partition (refuse) of
     * rabbitmq}, {@code kill of the Kafka broker}, {@code clock skew of instance 1}; an unknown
     * kind reads {@code KIND of TARGET}.
     */
    public String label() {
      return switch (fault) {
        case "kill" -> "kill of instance " + target;
        case "partition" -> "partition" + (mode.isEmpty() ? "" : " (" + mode + ")") + " of "
            + target;
        case "broker-kill" -> "kill of the Kafka broker";
        case "clock" -> "clock skew of instance " + target;
        default -> target.isEmpty() ? fault : fault + " of " + target;
      };
    }
  }
}

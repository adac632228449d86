package io.relaykit.spring.boot;

import io.relaykit.ordering.OrderingMode;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method as the handler of a relaykit subscription. The method takes an {@link
 * io.relaykit.message.Message}, a {@link io.relaykit.message.Delivery}, or a payload type (a class
 * or record, decoded by the subscription's codec), or a payload type beside a Message or Delivery
 * ({@code void on(OrderCreated e, Message m)}). A payload type may be a supertype: each message is
 * decoded into the subtype its type names (see {@link io.relaykit.codec.PayloadTypes#resolve}),
 * so one method can dispatch by type. A payload that cannot be decoded (bad bytes, another content
 * type, an unknown type, too large) fails the delivery with a {@link
 * io.relaykit.codec.PayloadConversionException}, a permanent failure: dead-lettered at once, with
 * a reason that names the target type and the payload's length and content type, never its
 * bytes. Returning
 * normally acknowledges the message, throwing means "not done" (retried by {@code
 * relaykit.retry.*}, or dead-lettered at once for a {@link
 * io.relaykit.retry.PermanentFailureException}), as for any {@link
 * io.relaykit.message.MessageHandler}.
 *
 * <p>The subscription runs on the application's {@link io.relaykit.message.Subscriber} bean (the
 * {@code relaykit.transport}) and is started by {@link RelaykitListenerRegistry} after the web
 * server, and stopped gracefully (drain, commit) on shutdown within {@code
 * spring.lifecycle.timeout-per-shutdown-phase}: a handler still running at the drain deadline is
 * not acknowledged or committed, so its message is redelivered (the in-process transport's
 * messages end with the context), and the subscription is logged by name. String attributes
 * accept {@code ${...}} placeholders. A method with a bad signature or bad attribute fails the
 * context's start naming the method.
 *
 * <p>Beans created after the listeners started (a {@code @Lazy} bean first requested later, a
 * prototype, a bean registered after the refresh) are subscribed when they are created, as Spring
 * Kafka starts late listener containers, and stopped with the others; a subscription that cannot
 * open then fails the bean's creation with an {@link IllegalStateException} naming the bean. Each
 * prototype instance is one more member of the group, until the registry stops. A bean destroyed
 * while the listeners run has its subscriptions closed. Beans of a child context are not seen by
 * the parent's registry.
 *
 * <pre>{@code
 * @RelaykitListener(destination = "orders", group = "sms", idempotent = true,
 *     idempotencyKey = "hasKey ? key : id")
 * void sendSms(Message order) { ... }
 * }</pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RelaykitListener {

  /**
   * The topic or queue to consume.
   *
   * @return the destination; not blank
   */
  String destination();

  /**
   * The consumer group: members of one group share the messages, each group sees all of them.
   *
   * @return the group; not blank
   */
  String group();

  /**
   * What may run in parallel.
   *
   * @return the ordering; default {@link OrderingMode#KEY}
   */
  OrderingMode ordering() default OrderingMode.KEY;

  /**
   * Worker threads; 0 (the default) for {@link io.relaykit.message.SubscriptionSpec}'s default.
   *
   * @return the worker threads, or 0
   */
  int concurrency() default 0;

  /**
   * Messages received but not finished; 0 (the default) for {@link
   * io.relaykit.message.SubscriptionSpec}'s default.
   *
   * @return the in-flight bound, or 0
   */
  int maxInFlight() default 0;

  /**
   * The handler timeout in relaykit's duration syntax ({@code 30s}); empty for {@link
   * io.relaykit.message.SubscriptionSpec}'s default.
   *
   * @return the timeout, or ""
   */
  String handlerTimeout() default "";

  /**
   * Whether the handler runs at most once per business key, through an {@link
   * io.relaykit.idempotency.IdempotentHandler} on the application's {@link
   * io.relaykit.idempotency.IdempotencyStore} bean (the database's on {@code relaykit.storage=h2}).
   *
   * @return true to make the handler idempotent
   */
  boolean idempotent() default false;

  /**
   * The business key of a message, a SpEL expression evaluated on the {@link
   * io.relaykit.message.Message} ({@code hasKey ? key : id}, {@code
   * headers['order-id']}; the root is {@link RelaykitListenerRegistry.KeySource}); empty (the
   * default) for the group and the message id. Used when {@link #idempotent()} is set.
   *
   * <p>Stored as {@code listener:key:<group length>:<group>:<value>}, or by default {@code
   * listener:id:<group length>:<group>:<id>}: scoped to the group (two groups with the same
   * expression keep their own keys), unambiguous whatever the group, id and value contain, and
   * apart from the HTTP filter's {@code http:} keys in the same store. Reading {@code key} on a message without one,
   * an expression that fails, or a null or blank result throws an {@link IllegalStateException}
   * naming the message and the expression: the delivery fails and is retried, then dead-lettered
   * with that reason (it is never skipped as done under a shared key).
   *
   * @return the expression, or ""
   */
  String idempotencyKey() default "";

  /**
   * How long one delivery may hold its business key, in relaykit's duration syntax; longer than
   * the handler timeout. Used when {@link #idempotent()} is set.
   *
   * @return the lease; default 5m
   */
  String idempotencyLease() default "5m";

  /**
   * The codec of a method that takes a payload type, named by its content type ({@code
   * application/json}); empty (the default) for the destination's codec, else the default codec
   * of the {@link io.relaykit.codec.Payloads} bean (JSON on Jackson 3 when it is on the class
   * path). A content type no codec has fails the start.
   *
   * @return the content type, or ""
   */
  String codec() default "";
}

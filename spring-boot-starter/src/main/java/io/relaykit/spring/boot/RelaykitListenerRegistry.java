package io.relaykit.spring.boot;

import io.relaykit.config.DurationFormat;
import io.relaykit.config.RetrySettings;
import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentHandler;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.SimpleEvaluationContext;

/**
 * Finds {@link RelaykitListener} methods on the application's beans (a {@link BeanPostProcessor})
 * and runs one subscription per method as a {@link SmartLifecycle}: subscribed when the context
 * starts, in {@link #PHASE}, after the web server, so no message is handled before the
 * application can serve; closed gracefully when it stops.
 *
 * <p>Start: every subscription is opened on the {@link Subscriber} bean, in the order the methods
 * were found; if one fails (broker unreachable, a spec the transport refuses), those already open
 * are closed and the start fails with that exception, so the context does not run half-consuming.
 *
 * <p>Stop: all subscriptions close at once, each with a deadline of four fifths of {@code
 * spring.lifecycle.timeout-per-shutdown-phase} (Spring's default 30 s): intake stops, in-flight
 * handlers finish, what finished is acknowledged or committed. A handler still running at the
 * deadline is not acknowledged and is redelivered to the next consumer (at-least-once). Spring
 * waits for the callback up to the phase timeout.
 *
 * <p>Thread-safe; endpoints are collected while singletons are created, before start.
 */
public final class RelaykitListenerRegistry implements BeanPostProcessor, SmartLifecycle,
    BeanFactoryAware {

  /**
   * The lifecycle phase of the listeners: after Spring Boot's web server starts ({@code
   * DEFAULT_PHASE - 2048}) and stops gracefully ({@code DEFAULT_PHASE - 1024}), so listeners start
   * after it serves and stop (drain) before it finishes in-flight requests.
   */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 512;

  private static final SpelExpressionParser SPEL = new SpelExpressionParser();

  private final ObjectProvider<Subscriber> subscriber;
  private final ObjectProvider<IdempotencyStore> idempotency;
  private final ObjectProvider<Settings> settings;
  private final Duration stopDeadline;
  private final List<Endpoint> endpoints = new CopyOnWriteArrayList<>();
  private final List<Subscription> running = new CopyOnWriteArrayList<>();
  private volatile boolean started;
  private ConfigurableBeanFactory beanFactory;

  /**
   * Creates the registry; nothing is resolved until {@link #start()}.
   *
   * @param subscriber the transport's subscriber
   * @param idempotency the idempotency store, for {@link RelaykitListener#idempotent()}
   * @param settings the relaykit settings (the retry policy of every subscription), resolved
   *     when the first listener method is found
   * @param shutdownPhaseTimeout {@code spring.lifecycle.timeout-per-shutdown-phase}
   */
  public RelaykitListenerRegistry(ObjectProvider<Subscriber> subscriber,
      ObjectProvider<IdempotencyStore> idempotency, ObjectProvider<Settings> settings,
      Duration shutdownPhaseTimeout) {
    this.subscriber = Objects.requireNonNull(subscriber, "subscriber");
    this.idempotency = Objects.requireNonNull(idempotency, "idempotency");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.stopDeadline = drainDeadline(shutdownPhaseTimeout);
  }

  /**
   * The drain deadline for a shutdown phase timeout: four fifths of it, so the callback reaches
   * Spring before it gives up on the phase.
   *
   * @param phaseTimeout the phase timeout
   * @return the deadline
   */
  static Duration drainDeadline(Duration phaseTimeout) {
    return phaseTimeout.multipliedBy(4).dividedBy(5);
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    this.beanFactory = beanFactory instanceof ConfigurableBeanFactory c ? c : null;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName)
      throws BeansException {
    Class<?> type = AopUtils.getTargetClass(bean);
    Map<Method, RelaykitListener> found = MethodIntrospector.selectMethods(type,
        (MethodIntrospector.MetadataLookup<RelaykitListener>) m ->
            AnnotatedElementUtils.findMergedAnnotation(m, RelaykitListener.class));
    found.forEach((method, annotation) -> endpoints.add(endpoint(bean, beanName, method,
        annotation)));
    return bean;
  }

  /**
   * The subscriptions found, in the order they start.
   *
   * @return each method's spec; unmodifiable
   */
  public List<SubscriptionSpec> specs() {
    List<SubscriptionSpec> specs = new ArrayList<>();
    endpoints.forEach(e -> specs.add(e.spec));
    return Collections.unmodifiableList(specs);
  }

  @Override
  public synchronized void start() {
    if (started) {
      return;
    }
    Subscriber s = endpoints.isEmpty() ? null : subscriber.getObject();
    try {
      for (Endpoint e : endpoints) {
        running.add(s.subscribe(e.spec, e.handler()));
      }
    } catch (RuntimeException e) {
      closeAll(stopDeadline);
      throw e;
    }
    started = true;
  }

  @Override
  public void stop() {
    closeAll(stopDeadline);
  }

  @Override
  public void stop(Runnable callback) {
    if (running.isEmpty()) {
      started = false;
      callback.run();
      return;
    }
    Thread t = new Thread(() -> {
      try {
        closeAll(stopDeadline);
      } finally {
        callback.run();
      }
    }, "relaykit-listeners-stop");
    t.setDaemon(true);
    t.start();
  }

  /** Closes every running subscription in parallel, each within {@code deadline}. */
  private synchronized void closeAll(Duration deadline) {
    List<Thread> closers = new ArrayList<>();
    for (Subscription sub : running) {
      Thread t = new Thread(() -> sub.close(deadline), "relaykit-listener-close");
      t.setDaemon(true);
      t.start();
      closers.add(t);
    }
    for (Thread t : closers) {
      try {
        t.join(deadline.toMillis() + 1_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    running.clear();
    started = false;
  }

  @Override
  public boolean isRunning() {
    return started;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  private Endpoint endpoint(Object bean, String beanName, Method method, RelaykitListener a) {
    String where = beanName + "." + method.getName();
    Class<?>[] params = method.getParameterTypes();
    if (params.length != 1 || (params[0] != Message.class && params[0] != Delivery.class)) {
      throw new IllegalStateException("@RelaykitListener method " + where + " must take one"
          + " parameter, a Message or a Delivery; has " + params.length);
    }
    Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
    invocable.setAccessible(true);
    boolean wantsDelivery = params[0] == Delivery.class;
    MessageHandler invoke = d -> {
      try {
        invocable.invoke(bean, wantsDelivery ? d : d.message());
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof Exception ex) {
          throw ex;
        }
        throw (Error) cause;
      }
    };
    try {
      String group = resolve(a.group());
      SubscriptionSpec.Builder b = SubscriptionSpec.builder(resolve(a.destination()), group)
          .ordering(a.ordering())
          .retryPolicy(RetrySettings.from(settings.getObject()).toPolicy());
      if (a.concurrency() != 0) {
        b.concurrency(a.concurrency());
      }
      if (a.maxInFlight() != 0) {
        b.maxInFlight(a.maxInFlight());
      }
      String timeout = resolve(a.handlerTimeout());
      if (!timeout.isBlank()) {
        b.handlerTimeout(DurationFormat.parse("handlerTimeout", timeout));
      }
      SubscriptionSpec spec = b.build();
      if (!a.idempotent()) {
        return new Endpoint(spec, () -> invoke);
      }
      Duration lease = DurationFormat.parse("idempotencyLease", resolve(a.idempotencyLease()));
      Function<Message, String> key = businessKey(group, resolve(a.idempotencyKey()));
      return new Endpoint(spec,
          () -> new IdempotentHandler(idempotency.getObject(), key, lease, invoke));
    } catch (IllegalArgumentException | org.springframework.expression.ParseException e) {
      throw new IllegalStateException("@RelaykitListener method " + where + ": "
          + e.getMessage(), e);
    }
  }

  private String resolve(String value) {
    return beanFactory == null ? value : beanFactory.resolveEmbeddedValue(value);
  }

  /** The namespace of every key a listener stores; the HTTP filter's is {@code http:}. */
  static final String NAMESPACE = "listener:";

  /**
   * The stored idempotency key of a message: {@code listener:id:<group length>:<group>:<id>} by
   * default, or {@code listener:key:<value>} for the value of the SpEL expression on {@link
   * KeySource}. The length prefix makes the default unambiguous whatever the group and the id
   * contain; the {@code id:}/{@code key:} tokens keep custom keys apart from default ones, and the
   * {@code listener:} namespace keeps both apart from the HTTP filter's {@code http:} keys in a
   * shared store.
   *
   * <p>An expression that reads {@code key} on a message without one, that fails, or that gives
   * null or a blank string throws an {@link IllegalStateException} naming the message and the
   * expression: the delivery fails (retried, then dead-lettered with that reason) instead of every
   * such message sharing one key and all but the first being skipped as done.
   */
  static Function<Message, String> businessKey(String group, String expression) {
    if (expression == null || expression.isBlank()) {
      return m -> NAMESPACE + "id:" + group.length() + ":" + group + ":" + m.id();
    }
    Expression e = SPEL.parseExpression(expression);
    return m -> {
      Object v;
      try {
        v = e.getValue(SimpleEvaluationContext.forReadOnlyDataBinding().withInstanceMethods()
            .build(), new KeySource(m, expression));
      } catch (org.springframework.expression.EvaluationException ex) {
        for (Throwable c = ex; c != null; c = c.getCause()) {
          if (c instanceof KeylessMessageException k) {
            throw k;
          }
        }
        throw new IllegalStateException("the idempotencyKey expression '" + expression
            + "' failed on message " + m.id() + ": " + ex.getMessage(), ex);
      }
      String s = v == null ? null : v.toString();
      if (s == null || s.isBlank()) {
        throw new IllegalStateException("the idempotencyKey expression '" + expression
            + "' gave " + (s == null ? "null" : "a blank key") + " for message " + m.id());
      }
      return NAMESPACE + "key:" + s;
    };
  }

  /** Thrown when an idempotencyKey expression reads the key of a message without one. */
  static final class KeylessMessageException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    KeylessMessageException(String message) {
      super(message);
    }
  }

  /**
   * What an {@link RelaykitListener#idempotencyKey()} expression sees: {@code id}, {@code type},
   * {@code key}, {@code hasKey}, {@code headers} and {@code payload} (UTF-8 text). Reading {@code
   * key} on a message without one throws an {@link IllegalStateException} (guard with {@code
   * hasKey ? key : id}).
   */
  public static final class KeySource {
    private final Message message;
    private final String expression;

    KeySource(Message message, String expression) {
      this.message = message;
      this.expression = expression;
    }

    /** @return the message id */
    public String getId() {
      return message.id();
    }

    /** @return the message type */
    public String getType() {
      return message.type();
    }

    /**
     * The message key.
     *
     * @return the key; never null
     * @throws IllegalStateException if the message has no key
     */
    public String getKey() {
      return message.key().orElseThrow(() -> new KeylessMessageException("message "
          + message.id() + " has no key; the idempotencyKey expression '" + expression
          + "' reads key"));
    }

    /** @return whether the message has a key */
    public boolean isHasKey() {
      return message.key().isPresent();
    }

    /** @return the headers */
    public Map<String, String> getHeaders() {
      return message.headers();
    }

    /** @return the payload as UTF-8 text */
    public String getPayload() {
      return message.payloadUtf8();
    }
  }

  private record Endpoint(SubscriptionSpec spec,
      java.util.function.Supplier<MessageHandler> handlerFactory) {
    MessageHandler handler() {
      return handlerFactory.get();
    }
  }
}

package io.relaykit.spring.boot;

import io.relaykit.codec.PayloadCodec;
import io.relaykit.codec.Payloads;
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
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.config.DestructionAwareBeanPostProcessor;
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
 * <p>Stop: one deadline for the whole stop, taken once when Spring asks the registry to stop (on
 * {@link System#nanoTime()}), from {@code spring.lifecycle.timeout-per-shutdown-phase} (Spring's
 * default 30 s). All subscriptions close at once, in parallel, each draining until seven tenths
 * of the phase timeout (21 s by default): intake stops, in-flight handlers finish, what finished
 * is acknowledged or committed; the time left is for the transport's final commit and close (a
 * Kafka consumer leaving its group). At nine tenths of the phase timeout (27 s) the registry
 * reports the stop done to Spring whatever is still closing, so Spring's own phase timeout does
 * not fire first and the stop never runs past the phase, however many subscriptions are stuck.
 *
 * <p>A handler still running at the drain deadline is not acknowledged or committed, and its late
 * result is ignored: on Kafka its offset stays uncommitted and the group's next consumer gets the
 * record again; on RabbitMQ it is requeued when the channel closes; on the in-process transport it
 * goes back to its group, and since that transport lives in memory and closes with the context,
 * the message is lost with it unless another member of the group still runs. Each such
 * subscription, and each one whose close had not returned by the stop deadline (left to finish on
 * its daemon thread, possibly while later phases and bean destruction run), is logged at WARNING
 * with its destination, group and method.
 *
 * <p>Beans created after the registry started (a {@code @Lazy} bean first requested later, a
 * prototype, a bean registered after the refresh) have their {@link RelaykitListener} methods
 * subscribed at once, as Spring Kafka's listener registry starts late containers, and closed with
 * the others when the registry stops; a subscription that cannot open fails the bean's creation
 * naming the bean. Each prototype instance gets its own subscription (members of one group). Only
 * beans of the registry's own bean factory are seen: a child context needs its own registry.
 *
 * <p>Thread-safe.
 */
public final class RelaykitListenerRegistry implements DestructionAwareBeanPostProcessor,
    SmartLifecycle, BeanFactoryAware {

  /**
   * The lifecycle phase of the listeners: after Spring Boot's web server starts ({@code
   * DEFAULT_PHASE - 2048}) and stops gracefully ({@code DEFAULT_PHASE - 1024}), so listeners start
   * after it serves and stop (drain) before it finishes in-flight requests.
   */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 512;

  private static final System.Logger LOG =
      System.getLogger(RelaykitListenerRegistry.class.getName());
  private static final SpelExpressionParser SPEL = new SpelExpressionParser();

  private final ObjectProvider<Subscriber> subscriber;
  private final ObjectProvider<IdempotencyStore> idempotency;
  private final ObjectProvider<Settings> settings;
  private final Supplier<Payloads> payloads;
  private final Duration drainDeadline;
  private final Duration stopDeadline;
  private final List<Endpoint> endpoints = new CopyOnWriteArrayList<>();
  private final List<Running> running = new CopyOnWriteArrayList<>();
  private volatile List<String> unfinishedAtLastStop = List.of();
  private volatile boolean started;
  private ConfigurableBeanFactory beanFactory;
  private ObjectProvider<io.relaykit.trace.TracePropagation> tracing;

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
    this(subscriber, idempotency, settings, () -> null, shutdownPhaseTimeout);
  }

  /**
   * Creates the registry, with the codecs of listener methods that take a typed payload; nothing
   * is resolved until {@link #start()}.
   *
   * @param subscriber the transport's subscriber
   * @param idempotency the idempotency store, for {@link RelaykitListener#idempotent()}
   * @param settings the relaykit settings (the retry policy of every subscription), resolved
   *     when the first listener method is found
   * @param payloads the codecs and type names, resolved when the first method taking a typed
   *     payload is found; none (an empty provider) makes such a method fail the start
   * @param shutdownPhaseTimeout {@code spring.lifecycle.timeout-per-shutdown-phase}
   */
  public RelaykitListenerRegistry(ObjectProvider<Subscriber> subscriber,
      ObjectProvider<IdempotencyStore> idempotency, ObjectProvider<Settings> settings,
      ObjectProvider<Payloads> payloads, Duration shutdownPhaseTimeout) {
    this(subscriber, idempotency, settings,
        Objects.requireNonNull(payloads, "payloads")::getIfAvailable, shutdownPhaseTimeout);
  }

  private RelaykitListenerRegistry(ObjectProvider<Subscriber> subscriber,
      ObjectProvider<IdempotencyStore> idempotency, ObjectProvider<Settings> settings,
      Supplier<Payloads> payloads, Duration shutdownPhaseTimeout) {
    this.subscriber = Objects.requireNonNull(subscriber, "subscriber");
    this.idempotency = Objects.requireNonNull(idempotency, "idempotency");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.payloads = payloads;
    Objects.requireNonNull(shutdownPhaseTimeout, "shutdownPhaseTimeout");
    if (shutdownPhaseTimeout.isNegative() || shutdownPhaseTimeout.isZero()) {
      throw new IllegalArgumentException("spring.lifecycle.timeout-per-shutdown-phase must be"
          + " positive, was " + shutdownPhaseTimeout);
    }
    this.drainDeadline = drainDeadline(shutdownPhaseTimeout);
    this.stopDeadline = stopDeadline(shutdownPhaseTimeout);
  }

  /**
   * This registry, with each handler call inside a scope of the application's {@link
   * io.relaykit.trace.TracePropagation} bean (the starter's observations), resolved at start.
   */
  RelaykitListenerRegistry withTracing(
      ObjectProvider<io.relaykit.trace.TracePropagation> tracing) {
    this.tracing = tracing;
    return this;
  }

  /** The transport's subscriber, traced by the propagation bean if there is one. */
  private Subscriber subscriber() {
    Subscriber s = subscriber.getObject();
    io.relaykit.trace.TracePropagation p = tracing == null ? null : tracing.getIfUnique();
    return p == null ? s : io.relaykit.message.Tracing.subscriber(s, p);
  }

  /**
   * How long subscriptions drain for a shutdown phase timeout: seven tenths of it, leaving time
   * for the transport's final commit and close before the stop deadline.
   *
   * @param phaseTimeout the phase timeout
   * @return the drain deadline, measured from the start of the stop
   */
  static Duration drainDeadline(Duration phaseTimeout) {
    return phaseTimeout.multipliedBy(7).dividedBy(10);
  }

  /**
   * When a stop reports done for a shutdown phase timeout, whatever still runs: nine tenths of
   * it, a tenth before Spring gives up on the phase.
   *
   * @param phaseTimeout the phase timeout
   * @return the stop deadline, measured from the start of the stop
   */
  static Duration stopDeadline(Duration phaseTimeout) {
    return phaseTimeout.multipliedBy(9).dividedBy(10);
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
    if (found.isEmpty()) {
      return bean;
    }
    List<Endpoint> made = new ArrayList<>();
    found.forEach((method, annotation) -> made.add(endpoint(bean, beanName, method,
        annotation)));
    register(beanName, made);
    return bean;
  }

  /**
   * Adds a bean's endpoints; subscribes them at once when the registry runs already (a bean
   * created after the start), closing what it opened and failing naming the bean if one cannot.
   */
  private synchronized void register(String beanName, List<Endpoint> made) {
    if (!started) {
      endpoints.addAll(made);
      return;
    }
    Subscriber s = subscriber();
    List<Running> opened = new ArrayList<>();
    try {
      for (Endpoint e : made) {
        opened.add(new Running(s.subscribe(e.spec, e.handler()), e));
      }
    } catch (RuntimeException e) {
      long now = System.nanoTime();
      closeInParallel(opened, now + drainDeadline.toNanos(), now + stopDeadline.toNanos());
      throw new IllegalStateException("@RelaykitListener bean '" + beanName + "' was created"
          + " after the listeners started, and its subscription could not open: " + e, e);
    }
    endpoints.addAll(made);
    running.addAll(opened);
  }

  @Override
  public boolean requiresDestruction(Object bean) {
    for (Endpoint e : endpoints) {
      if (e.bean == bean) {
        return true;
      }
    }
    return false;
  }

  /**
   * A bean with listener methods is destroyed before the registry stops (a scoped bean at the end
   * of its scope, a bean removed from the factory): its subscriptions close, draining as in a stop
   * (see the class comment), and are not opened again by a later start.
   */
  @Override
  public void postProcessBeforeDestruction(Object bean, String beanName) {
    List<Running> closing = new ArrayList<>();
    synchronized (this) {
      endpoints.removeIf(e -> e.bean == bean);
      for (Running r : running) {
        if (r.endpoint.bean == bean) {
          closing.add(r);
        }
      }
      running.removeAll(closing);
    }
    long now = System.nanoTime();
    closeInParallel(closing, now + drainDeadline.toNanos(), now + stopDeadline.toNanos());
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
    Subscriber s = endpoints.isEmpty() ? null : subscriber();
    try {
      for (Endpoint e : endpoints) {
        running.add(new Running(s.subscribe(e.spec, e.handler()), e));
      }
    } catch (RuntimeException e) {
      closeAll(System.nanoTime());
      throw e;
    }
    started = true;
  }

  /** Stops within nine tenths of the shutdown phase timeout (see the class comment). */
  @Override
  public void stop() {
    closeAll(System.nanoTime());
  }

  @Override
  public void stop(Runnable callback) {
    if (running.isEmpty()) {
      started = false;
      callback.run();
      return;
    }
    long askedAt = System.nanoTime();
    Thread t = new Thread(() -> {
      try {
        closeAll(askedAt);
      } finally {
        callback.run();
      }
    }, "relaykit-listeners-stop");
    t.setDaemon(true);
    t.start();
  }

  /**
   * Closes every running subscription in parallel: each drains until the drain deadline, and the
   * wait for all of them ends at the stop deadline, both counted from {@code askedAt}.
   */
  private synchronized void closeAll(long askedAt) {
    List<Running> subs = List.copyOf(running);
    running.clear();
    started = false;
    unfinishedAtLastStop = closeInParallel(subs, askedAt + drainDeadline.toNanos(),
        askedAt + stopDeadline.toNanos());
  }

  /**
   * Closes {@code subs}, one daemon thread each, draining until {@code drainEnd} and waited for
   * until {@code stopEnd} ({@link System#nanoTime()} values); logs and returns the names of
   * those that did not drain in time or had not closed by {@code stopEnd}.
   */
  private static List<String> closeInParallel(List<Running> subs, long drainEnd, long stopEnd) {
    if (subs.isEmpty()) {
      return List.of();
    }
    List<Closer> closers = new ArrayList<>();
    for (Running r : subs) {
      Closer c = new Closer(r, drainEnd);
      c.thread.start();
      closers.add(c);
    }
    boolean interrupted = false;
    for (Closer c : closers) {
      try {
        // One shared end: a stuck closer uses up its own time, never the next one's.
        TimeUnit.NANOSECONDS.timedJoin(c.thread, stopEnd - System.nanoTime());
      } catch (InterruptedException e) {
        interrupted = true;
        break;
      }
    }
    List<String> unfinished = new ArrayList<>();
    for (Closer c : closers) {
      if (c.thread.isAlive()) {
        unfinished.add(c.running.name());
        LOG.log(System.Logger.Level.WARNING, "relaykit: subscription " + c.running.name()
            + " was still closing at the shutdown deadline; left to finish on a daemon thread."
            + " What its handlers had not finished is not acknowledged or committed and is"
            + " redelivered to the next consumer");
      } else if (c.failure != null) {
        unfinished.add(c.running.name());
        LOG.log(System.Logger.Level.WARNING, "relaykit: closing subscription " + c.running.name()
            + " failed; what its handlers had not finished is not acknowledged or committed and"
            + " is redelivered to the next consumer", c.failure);
      } else if (!c.drained) {
        unfinished.add(c.running.name());
        LOG.log(System.Logger.Level.WARNING, "relaykit: subscription " + c.running.name()
            + " had handlers still running at the drain deadline; their messages were not"
            + " acknowledged or committed and are redelivered to the next consumer");
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return List.copyOf(unfinished);
  }

  /**
   * The subscriptions of the last stop that did not drain in time or had not closed by the stop
   * deadline; for tests.
   */
  List<String> unfinishedAtLastStop() {
    return unfinishedAtLastStop;
  }

  /** The open subscriptions, in the order they opened; for tests. */
  List<Subscription> subscriptions() {
    List<Subscription> subs = new ArrayList<>();
    running.forEach(r -> subs.add(r.subscription));
    return subs;
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
    Arguments arguments = arguments(method, where, a);
    Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
    invocable.setAccessible(true);
    MessageHandler invoke = d -> {
      try {
        invocable.invoke(bean, arguments.of(d));
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
      String name = spec.destination() + "/" + group + " (" + where + ")";
      if (!a.idempotent()) {
        return new Endpoint(bean, spec, name, () -> invoke);
      }
      Duration lease = DurationFormat.parse("idempotencyLease", resolve(a.idempotencyLease()));
      Function<Message, String> key = businessKey(group, resolve(a.idempotencyKey()));
      return new Endpoint(bean, spec, name,
          () -> new IdempotentHandler(idempotency.getObject(), key, lease, invoke));
    } catch (IllegalArgumentException | org.springframework.expression.ParseException e) {
      throw new IllegalStateException("@RelaykitListener method " + where + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * How a method's parameters are filled from a delivery: a Message, a Delivery, and at most one
   * typed payload, decoded with the subscription's codec.
   */
  private Arguments arguments(Method method, String where, RelaykitListener a) {
    Class<?>[] params = method.getParameterTypes();
    Type[] generic = method.getGenericParameterTypes();
    if (params.length < 1 || params.length > 2) {
      throw new IllegalStateException("@RelaykitListener method " + where + " must take one"
          + " parameter (a Message, a Delivery or a payload type) or two (a payload type and a"
          + " Message or Delivery); has " + params.length);
    }
    int typed = -1;
    for (int i = 0; i < params.length; i++) {
      if (params[i] == Message.class || params[i] == Delivery.class) {
        continue;
      }
      if (typed >= 0) {
        throw new IllegalStateException("@RelaykitListener method " + where + " takes two"
            + " payload types (" + params[typed].getName() + ", " + params[i].getName()
            + "); it may take one, beside a Message or Delivery");
      }
      if (params[i].isPrimitive() || generic[i] instanceof ParameterizedType) {
        throw new IllegalStateException("@RelaykitListener method " + where + ": payload type "
            + generic[i].getTypeName() + " is not supported; take a class or record (wrap a"
            + " collection in a record)");
      }
      typed = i;
    }
    if (typed >= 0 && params.length == 2 && params[0] == params[1]) {
      throw new IllegalStateException("@RelaykitListener method " + where + " takes two "
          + params[0].getSimpleName() + " parameters");
    }
    String codecName = resolve(a.codec());
    if (typed < 0) {
      if (!codecName.isBlank()) {
        throw new IllegalStateException("@RelaykitListener method " + where + " names codec '"
            + codecName + "' but takes no payload type");
      }
      return new Arguments(params, -1, null, null, null);
    }
    Payloads p = payloads.get();
    if (p == null) {
      throw new IllegalStateException("@RelaykitListener method " + where + " takes a "
          + params[typed].getName() + " but no payload codec is configured: put Jackson 3"
          + " (tools.jackson.core:jackson-databind) on the class path, or define a"
          + " io.relaykit.codec.Payloads bean");
    }
    PayloadCodec codec;
    try {
      codec = codecName.isBlank() ? p.codecFor(resolve(a.destination())) : p.codec(codecName);
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("@RelaykitListener method " + where + ": "
          + e.getMessage(), e);
    }
    return new Arguments(params, typed, params[typed], p, codec);
  }

  /** Fills a listener method's parameters; a decode failure is a permanent failure. */
  private record Arguments(Class<?>[] params, int typed, Class<?> type, Payloads payloads,
      PayloadCodec codec) {
    Object[] of(Delivery d) {
      Object[] args = new Object[params.length];
      for (int i = 0; i < params.length; i++) {
        if (i == typed) {
          args[i] = payloads.decode(d.message(), type, codec);
        } else {
          args[i] = params[i] == Delivery.class ? d : d.message();
        }
      }
      return args;
    }
  }

  private String resolve(String value) {
    return beanFactory == null ? value : beanFactory.resolveEmbeddedValue(value);
  }

  /** The namespace of every key a listener stores; the HTTP filter's is {@code http:}. */
  static final String NAMESPACE = "listener:";

  /**
   * The stored idempotency key of a message: {@code listener:id:<group length>:<group>:<id>} by
   * default, or {@code listener:key:<group length>:<group>:<value>} for the value of the SpEL
   * expression on {@link KeySource}: both are scoped to the group, so two groups whose handlers
   * use the same expression never skip each other's messages as done. The length prefix makes
   * the keys unambiguous whatever the group, id and value contain; the {@code id:}/{@code key:} tokens keep custom keys apart from default ones, and the
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
      return NAMESPACE + "key:" + group.length() + ":" + group + ":" + s;
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

  private record Endpoint(Object bean, SubscriptionSpec spec, String name,
      java.util.function.Supplier<MessageHandler> handlerFactory) {
    MessageHandler handler() {
      return handlerFactory.get();
    }
  }

  /** An open subscription and its endpoint. */
  private record Running(Subscription subscription, Endpoint endpoint) {
    /** The name for logs: destination/group (bean.method). */
    String name() {
      return endpoint.name;
    }
  }

  /** Closes one subscription on its own daemon thread. */
  private static final class Closer {
    final Running running;
    final Thread thread;
    volatile boolean drained;
    volatile RuntimeException failure;

    Closer(Running running, long drainEnd) {
      this.running = running;
      this.thread = new Thread(() -> {
        try {
          drained = running.subscription.close(
              Duration.ofNanos(Math.max(0, drainEnd - System.nanoTime())));
        } catch (RuntimeException e) {
          failure = e;
        }
      }, "relaykit-listener-close-" + running.name());
      this.thread.setDaemon(true);
    }
  }
}

package io.relaykit.message;

import java.lang.reflect.Method;
import java.util.concurrent.ThreadFactory;

/**
 * What kind of thread a subscription's handlers run on. Every transport (in-process, Kafka,
 * RabbitMQ) honours it for its handler workers; it changes only the kind of thread, never the
 * bounds: {@link SubscriptionSpec#concurrency()} and {@link SubscriptionSpec#maxInFlight()} hold
 * the same way for both kinds.
 *
 * <p>{@link #VIRTUAL} needs a JDK with virtual threads (Java 21 or newer). relaykit is compiled for
 * Java 17, so it reaches {@code Thread.ofVirtual()} by reflection; on an older JDK a
 * {@link SubscriptionSpec} asking for virtual threads is rejected when it is built, with an
 * {@link IllegalArgumentException} naming the field and the running Java version, rather than
 * silently falling back to platform threads.
 */
public enum HandlerThreads {
  /** Platform (daemon) threads, one per worker; the default. */
  PLATFORM,
  /**
   * Virtual threads (Java 21+). A blocking handler then costs a parked virtual thread rather than
   * an OS thread; a handler that pins its carrier (long {@code synchronized} blocks on older JDKs,
   * native calls) still occupies one of the JVM's carrier threads.
   */
  VIRTUAL;

  /**
   * Whether this JVM can create the threads this kind names: always for {@link #PLATFORM}, on Java
   * 21+ for {@link #VIRTUAL}.
   *
   * @return true when {@link #factory(String, ThreadFactory)} will succeed
   */
  public boolean isAvailable() {
    return this == PLATFORM || VirtualThreads.FACTORY_BUILDER != null;
  }

  /**
   * The thread factory a transport's worker pool uses for this kind.
   *
   * @param name prefix of the threads' names (virtual threads get {@code name-N})
   * @param platform the transport's own factory, returned unchanged for {@link #PLATFORM}
   * @return {@code platform}, or a factory of virtual threads
   * @throws IllegalStateException for {@link #VIRTUAL} on a JDK without virtual threads
   */
  public ThreadFactory factory(String name, ThreadFactory platform) {
    if (this == PLATFORM) {
      return platform;
    }
    requireAvailable("handlerThreads");
    try {
      Object builder = VirtualThreads.OF_VIRTUAL.invoke(null);
      builder = VirtualThreads.NAME.invoke(builder, name + "-", 1L);
      return (ThreadFactory) VirtualThreads.FACTORY_BUILDER.invoke(builder);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot create virtual threads on Java "
          + Runtime.version(), e);
    }
  }

  void requireAvailable(String field) {
    if (!isAvailable()) {
      throw new IllegalArgumentException(field + " " + this + " needs Java 21 or newer"
          + " (virtual threads); this JVM is Java " + Runtime.version()
          + " - use " + PLATFORM + " or run on a newer JDK");
    }
  }

  /** Reflective handles to {@code Thread.ofVirtual().name(prefix, start).factory()}, or nulls. */
  private static final class VirtualThreads {
    static final Method OF_VIRTUAL;
    static final Method NAME;
    static final Method FACTORY_BUILDER;

    static {
      Method ofVirtual = null;
      Method name = null;
      Method factory = null;
      try {
        ofVirtual = Thread.class.getMethod("ofVirtual");
        Class<?> builder = Class.forName("java.lang.Thread$Builder");
        name = builder.getMethod("name", String.class, long.class);
        factory = builder.getMethod("factory");
      } catch (ReflectiveOperationException e) {
        // Java 17-20: no virtual threads (or only as a preview); VIRTUAL is unavailable.
        ofVirtual = null;
        name = null;
        factory = null;
      }
      OF_VIRTUAL = ofVirtual;
      NAME = name;
      FACTORY_BUILDER = factory;
    }

    private VirtualThreads() {}
  }
}

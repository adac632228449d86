package io.relaykit.message;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ThreadFactory;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;

/**
 * The JDK-17 half runs in the normal build; the Java-21+ half runs under {@code ./relaykit
 * test-newest-jdk} (the optional command that builds and tests on the newest JDK on the machine),
 * which is why a JRE condition rather than a capability is acceptable here.
 */
class HandlerThreadsTest {

  @Test
  @DisplayName("platform threads are the default and always available")
  void platformIsDefault() {
    SubscriptionSpec spec = SubscriptionSpec.builder("d", "g").build();
    assertEquals(HandlerThreads.PLATFORM, spec.handlerThreads());
    assertTrue(HandlerThreads.PLATFORM.isAvailable());
    ThreadFactory own = r -> new Thread(r, "own");
    assertEquals(own, HandlerThreads.PLATFORM.factory("x", own));
  }

  @Test
  @DisplayName("a null handlerThreads is rejected naming the field")
  void nullRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SubscriptionSpec.builder("d", "g").handlerThreads(null).build());
    assertTrue(e.getMessage().contains("handlerThreads"), e.getMessage());
  }

  @Test
  @EnabledForJreRange(max = JRE.JAVA_20)
  @DisplayName("before Java 21, asking for virtual threads fails when the spec is built")
  void virtualRejectedBefore21() {
    assertFalse(HandlerThreads.VIRTUAL.isAvailable());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SubscriptionSpec.builder("d", "g").handlerThreads(HandlerThreads.VIRTUAL).build());
    assertTrue(e.getMessage().contains("handlerThreads VIRTUAL needs Java 21"), e.getMessage());
    assertTrue(e.getMessage().contains(Runtime.version().toString()), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> HandlerThreads.VIRTUAL.factory("x", r -> new Thread(r)));
  }

  @Test
  @EnabledForJreRange(min = JRE.JAVA_21)
  @DisplayName("on Java 21+, the factory makes named virtual threads")
  void virtualOn21() throws Exception {
    assertTrue(HandlerThreads.VIRTUAL.isAvailable());
    SubscriptionSpec spec = SubscriptionSpec.builder("d", "g")
        .handlerThreads(HandlerThreads.VIRTUAL).build();
    Thread t = spec.handlerThreads().factory("vt", r -> new Thread(r)).newThread(() -> { });
    assertTrue(isVirtual(t), "not virtual: " + t);
    assertEquals("vt-1", t.getName());
  }

  /** {@code Thread.isVirtual()} by reflection: the tests compile for release 17. */
  public static boolean isVirtual(Thread t) {
    try {
      return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
    } catch (NoSuchMethodException e) {
      return false;
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }
}

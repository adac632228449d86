package io.relaykit.codec;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Type names and the classes they stand for: the name {@link Payloads} records in a message's
 * {@code type} when it encodes an object, and the class it decodes a message of that type into.
 *
 * <p>A class's name is the one {@linkplain #register registered} for it, else its binary name
 * ({@link Class#getName()}). Register a stable name ({@code "order.created"}) when publisher and
 * consumer may rename or move their classes, or when messages are built by hand or come from
 * another language. Reading a type back ({@link #resolve}) accepts only a name registered for a
 * subtype of the handler's type, the handler type's own name, or the binary name of a subtype of
 * the handler's type (loaded without initialization, and only if the handler's type is not {@code
 * Object}): a header never makes relaykit build an arbitrary class.
 *
 * <p>Thread-safe; O(1) per call but for the class loading of an unregistered subtype's name.
 */
public final class PayloadTypes {

  private final Map<String, Class<?>> byName = new ConcurrentHashMap<>();
  private final Map<Class<?>, String> byClass = new ConcurrentHashMap<>();

  /** An empty registry: every class goes by its binary name. */
  public PayloadTypes() {}

  /**
   * Records {@code name} as the type name of {@code type}, both ways.
   *
   * @param name the type name; not blank
   * @param type the class; not null
   * @return this registry
   * @throws IllegalArgumentException if the name is blank, or already stands for another class,
   *     or the class already has another name
   */
  public synchronized PayloadTypes register(String name, Class<?> type) {
    Objects.requireNonNull(type, "type");
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("type name must not be blank");
    }
    Class<?> known = byName.get(name);
    if (known != null && known != type) {
      throw new IllegalArgumentException("type name '" + name + "' already stands for "
          + known.getName() + ", cannot register it for " + type.getName());
    }
    String knownName = byClass.get(type);
    if (knownName != null && !knownName.equals(name)) {
      throw new IllegalArgumentException(type.getName() + " is already registered as '"
          + knownName + "', cannot register it as '" + name + "'");
    }
    byName.put(name, type);
    byClass.put(type, name);
    return this;
  }

  /**
   * The type name of {@code type}: its registered name, else its binary name.
   *
   * @param type the class; not null
   * @return the name; never blank
   */
  public String nameOf(Class<?> type) {
    String name = byClass.get(Objects.requireNonNull(type, "type"));
    return name != null ? name : type.getName();
  }

  /**
   * The class to decode a message of type {@code typeName} into, for a handler that takes {@code
   * target}.
   *
   * @param typeName the message's type; not null
   * @param target the handler's parameter type; not null
   * @param <T> the handler's parameter type
   * @return {@code target} or a subtype of it
   * @throws IllegalArgumentException saying why the name is unknown or names a class that is not
   *     a {@code target}; the caller turns it into a {@link PayloadConversionException}
   */
  public <T> Class<? extends T> resolve(String typeName, Class<T> target) {
    Objects.requireNonNull(typeName, "typeName");
    Objects.requireNonNull(target, "target");
    Class<?> registered = byName.get(typeName);
    if (registered != null) {
      if (!target.isAssignableFrom(registered)) {
        throw new IllegalArgumentException("type header " + PayloadConversionException.quoted(
            typeName) + " stands for " + registered.getName() + ", which is not a "
            + target.getName());
      }
      return registered.asSubclass(target);
    }
    if (typeName.equals(nameOf(target)) || typeName.equals(target.getName())) {
      return target;
    }
    if (target != Object.class && looksLikeClassName(typeName)) {
      try {
        Class<?> named = Class.forName(typeName, false, loaderOf(target));
        if (target.isAssignableFrom(named) && !byClass.containsKey(named)) {
          return named.asSubclass(target);
        }
      } catch (ClassNotFoundException | LinkageError e) {
        // unknown: said below
      }
    }
    throw new IllegalArgumentException("unknown type header " + PayloadConversionException.quoted(
        typeName) + ": it is not registered for a " + target.getName() + " and names no subtype"
        + " of it");
  }

  private static ClassLoader loaderOf(Class<?> target) {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    return target.getClassLoader() != null ? target.getClassLoader() : context;
  }

  private static boolean looksLikeClassName(String s) {
    if (s.isEmpty() || s.length() > 500) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!(Character.isJavaIdentifierPart(c) || c == '.') || Character.isIdentifierIgnorable(c)) {
        return false;
      }
    }
    return Character.isJavaIdentifierStart(s.charAt(0));
  }
}

package io.relaykit.config;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One setting a module understands: its key, the type of its value, its default as text, a
 * sentence of description, and whether its value is a secret. A {@linkplain #isFamily() family}
 * key ends in {@code .*} and stands for every key below it, such as {@code
 * relaykit.kafka.producer.*} for client settings passed through as they are.
 *
 * <p>{@link Settings} checks every value against its key's type when it is built, so a bad value
 * fails at startup naming the key; the default is documentation and is pinned against the code's
 * default by each module's tests.
 *
 * @param name the key, {@code relaykit.<section>.<name>} in lower case, digits, dots and dashes,
 *     or such a prefix followed by {@code .*} for a family
 * @param type how the value is read and checked
 * @param defaultValue the default as it would be written, or a sentence such as "the
 *     subscription's maxInFlight"; null for none (then the key is optional or required, as the
 *     description says)
 * @param description what the setting does, one sentence
 * @param secret whether the value must never be shown (it is masked as {@code ****})
 * @param choices for {@link Type#CHOICE}, the accepted values in lower case; empty otherwise
 */
public record ConfigKey(String name, Type type, String defaultValue, String description,
    boolean secret, List<String> choices) {

  private static final Pattern KEY = Pattern.compile("relaykit(\\.[a-z0-9][a-z0-9-]*)+(\\.\\*)?");

  /** How a value is read; {@link Settings} rejects a value its type cannot read. */
  public enum Type {
    /** Any text. */
    STRING,
    /** A whole number from 1 to {@code Integer.MAX_VALUE}. */
    INTEGER,
    /** A whole number from 1 to {@code Long.MAX_VALUE}. */
    LONG,
    /** {@code true} or {@code false}, in any case. */
    BOOLEAN,
    /** A duration in {@link DurationFormat}'s syntax. */
    DURATION,
    /** A comma-separated list of durations in {@link DurationFormat}'s syntax. */
    DURATION_LIST,
    /** One of {@link ConfigKey#choices()}, in any case. */
    CHOICE,
    /**
     * A backend name: a letter, then letters, digits and dashes, in any case (read in lower
     * case): {@code memory}, {@code h2}, {@code rabbitmq}.
     */
    NAME
  }

  /**
   * Checks the parts.
   *
   * @param name the key
   * @param type its type
   * @param defaultValue the default as text, or null
   * @param description one sentence
   * @param secret whether the value is masked
   * @param choices the accepted values for CHOICE; null or empty otherwise
   * @throws NullPointerException if name, type or description is null
   * @throws IllegalArgumentException if the name is not a {@code relaykit.} key, or choices are
   *     given for another type than {@link Type#CHOICE} or missing for it
   */
  public ConfigKey {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(description, "description");
    if (!KEY.matcher(name).matches()) {
      throw new IllegalArgumentException("name must look like relaykit.section.name (lower case,"
          + " digits, dots, dashes; .* for a family), was '" + name + "'");
    }
    choices = choices == null ? List.of()
        : choices.stream().map(c -> c.toLowerCase(Locale.ROOT)).toList();
    if ((type == Type.CHOICE) == choices.isEmpty()) {
      throw new IllegalArgumentException(name + ": choices go with type CHOICE and only with it");
    }
  }

  /**
   * A key of {@code type}.
   *
   * @param name the key
   * @param type its type (not {@link Type#CHOICE}: use {@link #choice})
   * @param defaultValue the default as text, or null
   * @param description one sentence
   * @return the key, not secret
   */
  public static ConfigKey of(String name, Type type, String defaultValue, String description) {
    return new ConfigKey(name, type, defaultValue, description, false, List.of());
  }

  /**
   * A key whose value is one of {@code choices}.
   *
   * @param name the key
   * @param defaultValue the default choice, or null
   * @param description one sentence
   * @param choices the accepted values
   * @return the key, not secret
   */
  public static ConfigKey choice(String name, String defaultValue, String description,
      String... choices) {
    return new ConfigKey(name, Type.CHOICE, defaultValue, description, false, List.of(choices));
  }

  /**
   * A family of string keys below {@code prefix}, such as client settings passed through.
   *
   * @param prefix the keys' common prefix without the trailing dot: {@code
   *     relaykit.kafka.producer}
   * @param description one sentence
   * @return the key {@code prefix.*}
   */
  public static ConfigKey family(String prefix, String description) {
    return new ConfigKey(prefix + ".*", Type.STRING, null, description, false, List.of());
  }

  /**
   * This key with its value marked secret.
   *
   * @return a copy whose {@link #secret()} is true
   */
  public ConfigKey asSecret() {
    return new ConfigKey(name, type, defaultValue, description, true, choices);
  }

  /**
   * Whether this key stands for every key below its prefix ({@code name} ends in {@code .*}).
   *
   * @return true for a family
   */
  public boolean isFamily() {
    return name.endsWith(".*");
  }

  /**
   * Whether {@code key} is this key, or for a family, a key below it.
   *
   * @param key a full key
   * @return true when this key describes {@code key}
   */
  public boolean matches(String key) {
    if (!isFamily()) {
      return name.equals(key);
    }
    String prefix = name.substring(0, name.length() - 1);
    return key.startsWith(prefix) && key.length() > prefix.length();
  }

  /**
   * The {@code relaykit.<section>} a key belongs to: its first two parts.
   *
   * @param key a full key such as {@code relaykit.kafka.poll-timeout}
   * @return {@code relaykit.kafka}; the key itself when it has only two parts
   */
  public static String namespaceOf(String key) {
    int first = key.indexOf('.');
    int second = first < 0 ? -1 : key.indexOf('.', first + 1);
    return second < 0 ? key : key.substring(0, second);
  }
}

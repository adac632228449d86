package io.relaykit.outbox;

import io.relaykit.codec.Payloads;
import io.relaykit.message.Message;
import java.util.Objects;

/**
 * Appends typed objects to an outbox: {@link #append(String, String, Object)} encodes the object
 * with the destination's codec ({@link Payloads#message}), records its type and content type, and
 * appends the message.
 *
 * <p>For a store whose append needs the caller's transaction (the JDBC store's {@code
 * append(Connection, destination, message)}), build the message with {@link Payloads#message} and
 * append it there; this class is for appends that take a destination and a message.
 *
 * <p>Thread-safe if the appender is. Cost: one encode plus the appender's.
 */
public final class TypedOutbox {

  /** Where messages go: a destination and a message in, a sequence number out. */
  @FunctionalInterface
  public interface Appender {
    /**
     * Appends {@code message} for {@code destination}.
     *
     * @param destination the destination
     * @param message the message
     * @return the store's sequence number of the appended row
     */
    long append(String destination, Message message);
  }

  private final Appender appender;
  private final Payloads payloads;

  private TypedOutbox(Appender appender, Payloads payloads) {
    this.appender = Objects.requireNonNull(appender, "appender");
    this.payloads = Objects.requireNonNull(payloads, "payloads");
  }

  /**
   * Typed appends to {@code store}.
   *
   * @param store the in-memory outbox; not null
   * @param payloads the codecs and type names; not null
   * @return the typed outbox
   */
  public static TypedOutbox of(InMemoryOutboxStore store, Payloads payloads) {
    Objects.requireNonNull(store, "store");
    return new TypedOutbox(store::append, payloads);
  }

  /**
   * Typed appends through {@code appender}.
   *
   * @param appender appends one message; not null
   * @param payloads the codecs and type names; not null
   * @return the typed outbox
   */
  public static TypedOutbox of(Appender appender, Payloads payloads) {
    return new TypedOutbox(appender, payloads);
  }

  /**
   * The codecs and type names appends use.
   *
   * @return the payloads
   */
  public Payloads payloads() {
    return payloads;
  }

  /**
   * Encodes {@code payload} with {@code destination}'s codec and appends it.
   *
   * @param destination the destination; not blank
   * @param key the ordering key, or null for none
   * @param payload the object; not null
   * @return the appended message (its id and trace id identify it later)
   * @throws IllegalArgumentException if the destination or key is blank or the payload cannot be
   *     encoded; nothing is appended
   * @throws RuntimeException what the appender throws (an {@link OutboxFullException} from a
   *     bounded store)
   */
  public Message append(String destination, String key, Object payload) {
    Message message = payloads.message(destination, key, payload);
    appender.append(destination, message);
    return message;
  }
}

package io.relaykit.console;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * One dead-letter store the console shows: its name (as on the pages and in the logs), the store,
 * how one of its dead letters is replayed, whether it can remove single dead letters (purge), and a
 * note for the operator ("reads its whole topic; retention is the broker's").
 *
 * @param name a short name: letters, digits and {@code . _ : -}, at most 100 characters ({@code
 *     relaykit}, {@code kafka:orders.dlt}); unique within a console
 * @param store the store; the console lists, counts and finds through it, and purges through
 *     {@link DeadLetterStore#remove} when {@code purgeSupported}
 * @param replay replays one dead letter of this store by id (through core's {@link
 *     io.relaykit.deadletter.DeadLetterReplayer}, or a store's own atomic replay)
 * @param purgeSupported whether the store removes single dead letters
 * @param note shown next to the store's name, or null
 */
public record ConsoleDeadLetterSource(String name, DeadLetterStore store, Replay replay,
    boolean purgeSupported, String note) {

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,100}");

  /**
   * Replays one dead letter.
   */
  @FunctionalInterface
  public interface Replay {
    /**
     * Replays the dead letter {@code id}.
     *
     * @param id the dead letter's id; not blank
     * @return the replayed dead letter, or empty when there was none (already replayed or purged)
     * @throws RuntimeException when the store or the resend fails; the console shows the message
     *     and stops a set there (what remains is as the replay function's contract says: core's
     *     replayer leaves the dead letter in its store)
     */
    Optional<DeadLetter> replay(String id);
  }

  /**
   * Checks the parts.
   *
   * @param name the component of that name
   * @param store the component of that name
   * @param replay the component of that name
   * @param purgeSupported the component of that name
   * @param note the component of that name
   * @throws NullPointerException if {@code name}, {@code store} or {@code replay} is null
   * @throws IllegalArgumentException if {@code name} is not of the allowed form, or {@code note}
   *     is longer than 500 characters
   */
  public ConsoleDeadLetterSource {
    Objects.requireNonNull(name, "name");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("name must be 1..100 letters, digits or . _ : -, was "
          + name);
    }
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(replay, "replay");
    if (note != null && note.length() > 500) {
      throw new IllegalArgumentException("note must be at most 500 characters, was "
          + note.length());
    }
  }
}

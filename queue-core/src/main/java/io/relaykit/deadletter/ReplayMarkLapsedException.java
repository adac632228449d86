package io.relaykit.deadletter;

/**
 * A replay resent its dead letter, but its replay mark had lapsed by the time it came to remove
 * it: the mark's lease ran out on the store's clock during the resend, and another replay took the
 * dead letter over (and may have resent and removed it), or it was removed meanwhile. So the
 * message was sent by this replay, and another replay may also have sent it: it may reach its
 * destination twice. The message keeps its id, so consumers that deduplicate drop the repeat.
 *
 * <p>{@link DeadLetterReplayer} throws it instead of reporting success; it leaves the dead letter
 * and any other replay's mark alone. Give the replayer a lease longer than the target's longest
 * resend to avoid it.
 */
public final class ReplayMarkLapsedException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final transient DeadLetter deadLetter;

  /**
   * A replay whose mark lapsed.
   *
   * @param deadLetter the dead letter this replay resent; not null
   * @param what what the store showed instead of this replay's mark
   */
  public ReplayMarkLapsedException(DeadLetter deadLetter, String what) {
    super("dead letter " + deadLetter.id() + " was resent, but its replay mark lapsed before it"
        + " could be removed (" + what + "); another replay may also have sent it");
    this.deadLetter = deadLetter;
  }

  /**
   * The dead letter this replay resent.
   *
   * @return it, as it was marked; null only after deserialisation
   */
  public DeadLetter deadLetter() {
    return deadLetter;
  }
}

package io.relaykit.deadletter;

/**
 * Where a replayed dead letter goes: back to its source topic or queue, or back into an outbox.
 * Must be durable when it returns (a publish that was confirmed, a row that was committed); throw
 * if it could not be made so.
 */
@FunctionalInterface
public interface ReplayTarget {
  /**
   * Resends one dead letter; on return it must be durable at its destination.
   *
   * @param deadLetter the dead letter taken out of the store
   * @throws Exception if it could not be made durable; the replayer then puts it back
   */
  void resend(DeadLetter deadLetter) throws Exception;
}

package io.relaykit.deadletter;

/**
 * Where a replayed dead letter goes: back to its source topic or queue, or back into an outbox.
 * Must be durable when it returns (a publish that was confirmed, a row that was committed); throw
 * if it could not be made so.
 */
@FunctionalInterface
public interface ReplayTarget {
  void resend(DeadLetter deadLetter) throws Exception;
}

package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Publisher} that only counts: every publish is confirmed at once, nothing is kept. Both
 * sides of an outbox benchmark publish to one of these, so what is compared is the claim, the
 * bookkeeping and the database, not a transport. Thread-safe; costs one atomic increment and one
 * completed future per message; it cannot fail.
 */
public final class CountingPublisher implements Publisher {

  private final AtomicLong published = new AtomicLong();

  @Override
  public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
    long n = published.incrementAndGet();
    return CompletableFuture.completedFuture(
        new PublishReceipt(message.id(), destination, Long.toString(n)));
  }

  /** Messages published so far. */
  public long count() {
    return published.get();
  }

  /** Sets the count back to zero (between invocations). */
  public void reset() {
    published.set(0);
  }

  @Override
  public void close() {
  }
}

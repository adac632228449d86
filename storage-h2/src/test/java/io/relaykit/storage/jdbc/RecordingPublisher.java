package io.relaykit.storage.jdbc;

import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * An in-process broker for relay tests: records every publish in order and confirms it at once,
 * unless {@link #failWith} says the message fails (the future completes exceptionally with that
 * failure, as a broker nack would).
 */
final class RecordingPublisher implements Publisher {
  private final List<Message> published = new ArrayList<>();
  private final Map<String, AtomicInteger> confirmedById = new ConcurrentHashMap<>();
  private final AtomicLong position = new AtomicLong();
  private volatile Function<Message, RuntimeException> failWith = m -> null;

  /** From now on, a message for which {@code f} returns an exception fails with it. */
  void failWith(Function<Message, RuntimeException> f) {
    this.failWith = f;
  }

  @Override
  public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
    synchronized (published) {
      published.add(message);
    }
    RuntimeException failure = failWith.apply(message);
    if (failure != null) {
      return CompletableFuture.failedFuture(failure);
    }
    confirmedById.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
    return CompletableFuture.completedFuture(
        new PublishReceipt(message.id(), destination, Long.toString(position.incrementAndGet())));
  }

  /** Every publish attempt, in order, including failed ones. */
  List<Message> published() {
    synchronized (published) {
      return List.copyOf(published);
    }
  }

  /** Payloads of every publish attempt, in order. */
  List<String> publishedPayloads() {
    List<String> out = new ArrayList<>();
    for (Message m : published()) {
      out.add(m.payloadUtf8());
    }
    return out;
  }

  /** How many times each message id was confirmed. */
  Map<String, AtomicInteger> confirmedById() {
    return confirmedById;
  }

  int confirmedCount() {
    return confirmedById.size();
  }

  @Override
  public void close() {}
}

package io.relaykit.guice;

import com.google.inject.Module;
import com.google.inject.Singleton;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/** A transport backend registered through META-INF/services; its publisher records messages. */
public final class LoopbackTransportBackend implements BackendModuleProvider {

  @Override
  public Kind kind() {
    return Kind.TRANSPORT;
  }

  @Override
  public String name() {
    return "loopback";
  }

  @Override
  public Module module(RelayKitConfig config) {
    return binder -> RelayKitModule.override(binder, Publisher.class)
        .to(RecordingPublisher.class).in(Singleton.class);
  }

  /** Confirms every publish at once and keeps the message. */
  static final class RecordingPublisher implements Publisher {
    final List<Message> published = new CopyOnWriteArrayList<>();

    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      published.add(message);
      return CompletableFuture.completedFuture(
          new PublishReceipt(message.id(), destination, Integer.toString(published.size())));
    }

    @Override
    public void close() {}
  }
}

package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.InMemoryOutboxStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The code of docs/console.md, run. */
class ConsoleExampleTest {

  @Test
  @DisplayName("the documented console serves its overview behind the token")
  void documentedConsole() throws Exception {
    InMemoryOutboxStore outbox = new InMemoryOutboxStore();
    DeadLetterStore deadLetters = new InMemoryDeadLetterStore();
    // tag::embed[]
    DeadLetterReplayer replayer = new DeadLetterReplayer(deadLetters,
        d -> outbox.append(d.source(), d.message()), LifecycleListener.noop(),
        InstantSource.system());
    Console console = Console.builder()
        .backlog(now -> outbox.stats(now))
        .deadLetters(new ConsoleDeadLetterSource("relaykit", deadLetters, replayer::replay,
            true, null))
        .readOnly(false) // replay and purge allowed: the default is read-only
        .build();
    ConsoleServer server = ConsoleServer.builder(console).port(0).start(); // on 127.0.0.1
    System.out.println("console on " + server.url()); // the URL carries the access token
    // end::embed[]
    try (server) {
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + server.port() + "/")).timeout(Duration.ofSeconds(30))
          .header("Authorization", "Bearer " + server.token()).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("History since");
    }
  }
}

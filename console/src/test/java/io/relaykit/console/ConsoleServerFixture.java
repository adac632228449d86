package io.relaykit.console;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;

/**
 * A standalone {@link ConsoleServer} on loopback over one in-memory dead letter, and the HTTP a
 * test speaks to it: through {@link HttpClient}, or raw bytes for what a browser would not send.
 * The server is closed after each test.
 */
abstract class ConsoleServerFixture {

  final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore();
  /** Replays the console ran (the replayer's sink counts them). */
  final AtomicInteger resent = new AtomicInteger();
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  ConsoleServer server;
  /** The one stored dead letter, of message m1 to "orders", failed with {@code reason}. */
  DeadLetter d;

  /**
   * Stores the dead letter and starts a server over it whose replays count in {@link #resent}.
   *
   * @param allowActions false for a read-only console
   * @param reason the dead letter's reason, shown on its pages
   */
  void start(boolean allowActions, String reason) throws Exception {
    Instant t = Instant.parse("2026-12-07T03:00:00Z");
    d = new DeadLetter(Message.builder().id("m1").type("t").payload("x").build(), "orders",
        reason, null, null, 1, t, t);
    store.add(d);
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> resent.incrementAndGet(),
        LifecycleListener.noop(), InstantSource.system());
    Console console = Console.builder().readOnly(!allowActions)
        .readOnlyHint("start it with --allow-actions")
        .deadLetters(new ConsoleDeadLetterSource("relaykit", store, replayer::replay, true, null))
        .build();
    server = ConsoleServer.builder(console).start();
  }

  @AfterEach
  void close() {
    if (server != null) {
      server.close();
    }
  }

  /** The cookie a browser holds after its first visit with the token. */
  String cookie() {
    return server.cookieName() + "=" + server.token();
  }

  HttpResponse<String> send(String method, String path, String cookie, String form,
      String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + server.port() + path)).timeout(Duration.ofSeconds(30))
        .method(method, form == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(form));
    if (form != null) {
      b.header("Content-Type", "application/x-www-form-urlencoded");
    }
    if (cookie != null) {
      b.header("Cookie", cookie);
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> get(String pathAndQuery, String cookie) throws Exception {
    return send("GET", pathAndQuery, cookie, null);
  }

  /** A form POST to {@code /action}. */
  HttpResponse<String> post(String form, String cookie) throws Exception {
    return send("POST", "/action", cookie, form);
  }

  /** One raw HTTP/1.1 exchange: what a browser library would not send. */
  String raw(String request) throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = s.getInputStream();
      return new String(in.readNBytes(4096), StandardCharsets.ISO_8859_1);
    }
  }

  /** The page's CSRF field, or a value no server issued if it has none. */
  static String csrf(String page) {
    Matcher m = Pattern.compile("name=\"csrf\" value=\"([A-Za-z0-9_-]+)\"").matcher(page);
    if (m.find()) {
      return m.group(1);
    }
    return "none-on-this-page";
  }
}

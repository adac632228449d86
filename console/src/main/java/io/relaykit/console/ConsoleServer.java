package io.relaykit.console;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The console on the JDK's HTTP server, for a console outside an application ({@code ./relaykit
 * console}). Bound to 127.0.0.1 unless told otherwise.
 *
 * <p><b>Access.</b> Every request needs the access token, generated at start ({@link
 * SecureRandom}, 256 bits) unless given: as {@code ?token=} in the URL (the server then sets it as
 * an {@code HttpOnly}, {@code SameSite=Strict} cookie named {@link #cookieName()} and redirects
 * to the same page without it), as that cookie, or as {@code Authorization: Bearer}. A request
 * without it is refused with 401. Tokens are compared in constant time. A browser sends a host's
 * cookies to all its ports: any other web server on the same host name sees the cookie too.
 *
 * <p><b>Actions</b> are as the {@link Console} allows (read-only unless it was built otherwise).
 * A POST must carry, besides the cookie, the form field {@value #CSRF_FIELD} holding this server's
 * CSRF token (embedded in every form the console renders), and an {@code Origin} header, when
 * present, naming this server; otherwise it is refused with 403. The cookie is {@code
 * SameSite=Strict}, so a cross-site form never carries it.
 *
 * <p><b>Bounds.</b> Request bodies at most {@link Builder#maxBodyBytes} (413 beyond), URIs at most
 * {@value #MAX_URI} characters (414), form posts only ({@code application/x-www-form-urlencoded},
 * 415 otherwise); requests run on at most {@link Builder#threads} threads with at most {@value
 * #QUEUE} waiting (the server closes connections beyond that). A request must arrive, headers and
 * body, within {@value #MAX_REQUEST_SECONDS} seconds, or its connection is closed (so a client that
 * announces a body and never sends it cannot hold a thread); answers are not limited in time. The
 * deadline is the JDK server's {@code sun.net.httpserver.maxReqTime}, set when this class loads
 * unless already set, and read by the JDK when its first server starts: in a JVM that started
 * another JDK {@code HttpServer} before, set that property at launch.
 */
public final class ConsoleServer implements AutoCloseable {

  /** The form field carrying the CSRF token. */
  public static final String CSRF_FIELD = "csrf";
  /**
   * The start of the name of the cookie carrying the access token; the name is this, a dash and
   * the port ({@link #cookieName()}): browsers share a host's cookies among all its ports, and two
   * consoles on one host must not overwrite each other's token.
   */
  public static final String COOKIE = "relaykit-console";
  /** The longest request URI accepted. */
  public static final int MAX_URI = 8192;
  /** Requests waiting for a thread, at most. */
  public static final int QUEUE = 64;

  private static final System.Logger LOG = System.getLogger(ConsoleServer.class.getName());
  private static final SecureRandom RANDOM = new SecureRandom();
  /** Seconds a request (headers and body) may take to arrive before its connection is closed. */
  public static final int MAX_REQUEST_SECONDS = 10;

  static {
    // The JDK server reads these once, when its first server starts; without a request deadline a
    // few connections that announce a body and never send it hold every thread, token or not.
    if (System.getProperty("sun.net.httpserver.maxReqTime") == null) {
      System.setProperty("sun.net.httpserver.maxReqTime", Integer.toString(MAX_REQUEST_SECONDS));
    }
  }

  private final Console console;
  private final HttpServer server;
  private final ThreadPoolExecutor executor;
  private final String token;
  private final String csrf;
  private final int maxBodyBytes;
  private final String principal;

  private ConsoleServer(Builder b) throws IOException {
    this.console = b.console;
    this.token = b.token == null ? newToken() : b.token;
    this.csrf = newToken();
    this.maxBodyBytes = b.maxBodyBytes;
    this.principal = b.principal;
    AtomicInteger n = new AtomicInteger();
    this.executor = new ThreadPoolExecutor(b.threads, b.threads, 30, TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(QUEUE), r -> {
          Thread t = new Thread(r, "relaykit-console-http-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    executor.allowCoreThreadTimeOut(true);
    this.server = HttpServer.create(new InetSocketAddress(b.bind, b.port), 50);
    server.createContext("/", this::exchange);
    server.setExecutor(executor);
    server.start();
  }

  /**
   * A builder for a server in front of {@code console}.
   *
   * @param console the console to serve
   * @return a new builder
   * @throws NullPointerException if {@code console} is null
   */
  public static Builder builder(Console console) {
    return new Builder(console);
  }

  private static String newToken() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /** {@return the port it listens on} */
  public int port() {
    return server.getAddress().getPort();
  }

  /** {@return the name of the access token's cookie: {@code relaykit-console-PORT}} */
  public String cookieName() {
    return COOKIE + "-" + port();
  }

  /** {@return the access token} */
  public String token() {
    return token;
  }

  /** {@return the URL to open, token included: {@code http://HOST:PORT/?token=...}} */
  public String url() {
    InetSocketAddress a = server.getAddress();
    String host = a.getAddress().isAnyLocalAddress() ? "127.0.0.1"
        : a.getAddress().getHostAddress();
    if (host.contains(":")) {
      host = "[" + host + "]";
    }
    return "http://" + host + ":" + a.getPort() + "/?token=" + token;
  }

  /**
   * Stops accepting, waits up to a second for requests under way, and closes the console (its
   * history sampling). Idempotent.
   */
  @Override
  public void close() {
    server.stop(1);
    executor.shutdownNow();
    console.close();
  }

  private void exchange(HttpExchange ex) throws IOException {
    try (ex) {
      ConsoleResponse r;
      try {
        r = answer(ex);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "console server: request failed", e);
        r = plain(500, "relaykit console: the request failed: " + e);
      }
      // A store or source interrupted on this thread (or one that restores the flag after an
      // InterruptedException) leaves the flag set; the JDK server writes through an
      // interruptible channel, which would close the connection before the answer. The answer
      // is what the operator needs; the pool thread is done with the request either way.
      if (Thread.interrupted()) {
        LOG.log(System.Logger.Level.DEBUG, "console server: a request's thread was interrupted;"
            + " the answer is sent regardless");
      }
      send(ex, r);
    }
  }

  private ConsoleResponse answer(HttpExchange ex) throws IOException {
    URI uri = ex.getRequestURI();
    String raw = uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
    if (raw.length() > MAX_URI) {
      return plain(414, "the request URI is " + raw.length() + " characters long; at most "
          + MAX_URI);
    }
    Map<String, List<String>> params = new LinkedHashMap<>();
    try {
      decode(uri.getRawQuery(), params);
    } catch (IllegalArgumentException e) {
      return plain(400, "the query string is malformed: " + e.getMessage());
    }
    String method = ex.getRequestMethod();
    String given = first(params.remove("token"));
    boolean fromQuery = given != null;
    if (given == null) {
      given = cookie(ex, cookieName());
    }
    if (given == null) {
      String auth = ex.getRequestHeaders().getFirst("Authorization");
      if (auth != null && auth.startsWith("Bearer ")) {
        given = auth.substring(7).trim();
      }
    }
    if (given == null || !same(given, token)) {
      drain(ex);
      return plain(401, "relaykit console: this request needs the access token printed when the"
          + " console started (open the URL it printed, with ?token=...)");
    }
    if (fromQuery && (method.equals("GET") || method.equals("HEAD"))) {
      // Keep the token out of the address bar and the history: a cookie from now on.
      String location = uri.getRawPath() + query(params);
      ConsoleResponse r = new ConsoleResponse(303, "text/plain; charset=utf-8", "",
          Map.of("Location", location, "Cache-Control", "no-store", "Set-Cookie", cookieName()
              + "=" + token + "; Path=/; HttpOnly; SameSite=Strict"));
      return r;
    }
    if (method.equals("POST")) {
      String origin = ex.getRequestHeaders().getFirst("Origin");
      String host = ex.getRequestHeaders().getFirst("Host");
      if (origin != null && !origin.equals("null") && (host == null
          || !(origin.equals("http://" + host) || origin.equals("https://" + host)))) {
        drain(ex);
        return plain(403, "relaykit console: a POST from another origin (" + origin
            + ") is refused");
      }
      String type = ex.getRequestHeaders().getFirst("Content-Type");
      if (type == null || !type.toLowerCase(java.util.Locale.ROOT)
          .startsWith("application/x-www-form-urlencoded")) {
        drain(ex);
        return plain(415, "relaykit console: a POST must be a form"
            + " (application/x-www-form-urlencoded), was " + type);
      }
      String body;
      try {
        body = body(ex);
      } catch (BodyTooLarge e) {
        ex.getResponseHeaders().set("Connection", "close");
        return plain(413, "relaykit console: the request body is over " + maxBodyBytes
            + " bytes");
      }
      try {
        decode(body, params);
      } catch (IllegalArgumentException e) {
        return plain(400, "the form is malformed: " + e.getMessage());
      }
      String field = first(params.get(CSRF_FIELD));
      // A read-only console refuses every action itself, naming how to allow them.
      if (!console.readOnly() && (field == null || !same(field, csrf))) {
        return plain(403, "relaykit console: the form's CSRF token (" + CSRF_FIELD
            + ") is missing or wrong; reload the page and try again");
      }
    } else {
      drain(ex);
    }
    String path = uri.getPath();
    if (path == null || path.isEmpty()) {
      path = "/";
    }
    return console.handle(new ConsoleRequest(method, "", path, params, principal, CSRF_FIELD,
        csrf));
  }

  private static String query(Map<String, List<String>> params) {
    StringBuilder b = new StringBuilder();
    params.forEach((k, vs) -> vs.forEach(v -> b.append(b.length() == 0 ? '?' : '&')
        .append(Html.url(k)).append('=').append(Html.url(v))));
    return b.toString();
  }

  private static boolean same(String a, String b) {
    return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8),
        b.getBytes(StandardCharsets.UTF_8));
  }

  private static String first(List<String> values) {
    return values == null || values.isEmpty() ? null : values.get(0);
  }

  private static String cookie(HttpExchange ex, String name) {
    List<String> headers = ex.getRequestHeaders().get("Cookie");
    if (headers == null) {
      return null;
    }
    for (String h : headers) {
      for (String part : h.split(";")) {
        String p = part.trim();
        if (p.startsWith(name + "=")) {
          return p.substring(name.length() + 1);
        }
      }
    }
    return null;
  }

  private static void decode(String raw, Map<String, List<String>> into) {
    if (raw == null || raw.isEmpty()) {
      return;
    }
    for (String pair : raw.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      into.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
    }
  }

  /** Thrown when a body is over the bound. */
  private static final class BodyTooLarge extends IOException {
    private static final long serialVersionUID = 1L;
  }

  private String body(HttpExchange ex) throws IOException {
    String length = ex.getRequestHeaders().getFirst("Content-Length");
    if (length != null) {
      try {
        if (Long.parseLong(length.trim()) > maxBodyBytes) {
          throw new BodyTooLarge();
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("Content-Length is not a number: " + length);
      }
    }
    try (InputStream in = ex.getRequestBody()) {
      byte[] b = in.readNBytes(maxBodyBytes + 1);
      if (b.length > maxBodyBytes) {
        throw new BodyTooLarge();
      }
      return new String(b, StandardCharsets.UTF_8);
    }
  }

  /**
   * Reads and drops an unread request body, up to the bound; a longer one closes the connection
   * after the answer (its rest would otherwise be read as the next request).
   */
  private void drain(HttpExchange ex) throws IOException {
    try (InputStream in = ex.getRequestBody()) {
      byte[] rest = in.readNBytes(maxBodyBytes + 1);
      if (rest.length > maxBodyBytes) {
        ex.getResponseHeaders().set("Connection", "close");
      }
    }
  }

  private static ConsoleResponse plain(int status, String message) {
    return new ConsoleResponse(status, "text/plain; charset=utf-8", message + "\n",
        Map.of("Cache-Control", "no-store", "X-Content-Type-Options", "nosniff"));
  }

  private static void send(HttpExchange ex, ConsoleResponse r) throws IOException {
    r.headers().forEach((k, v) -> ex.getResponseHeaders().set(k, v));
    ex.getResponseHeaders().set("Content-Type", r.contentType());
    byte[] body = r.bodyBytes();
    boolean head = ex.getRequestMethod().equals("HEAD");
    ex.sendResponseHeaders(r.status(), head || body.length == 0 ? -1 : body.length);
    if (!head && body.length > 0) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    }
  }

  /** Configures a {@link ConsoleServer}. */
  public static final class Builder {
    private final Console console;
    private InetAddress bind = InetAddress.getLoopbackAddress();
    private int port;
    private String token;
    private int maxBodyBytes = 16 * 1024;
    private int threads = 4;
    private String principal = "operator";

    private Builder(Console console) {
      this.console = Objects.requireNonNull(console, "console");
    }

    /**
     * The address to listen on; default 127.0.0.1.
     *
     * @param bind the address
     * @return this builder
     * @throws NullPointerException if {@code bind} is null
     */
    public Builder bind(InetAddress bind) {
      this.bind = Objects.requireNonNull(bind, "bind");
      return this;
    }

    /**
     * The port; default 0 (any free port).
     *
     * @param port 0 to 65535
     * @return this builder
     * @throws IllegalArgumentException if {@code port} is out of range
     */
    public Builder port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be in 0..65535, was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * The access token; default a fresh random one (256 bits).
     *
     * @param token at least 16 characters of letters, digits, {@code -} and {@code _}
     * @return this builder
     * @throws IllegalArgumentException if {@code token} is too short or of other characters
     */
    public Builder token(String token) {
      if (token == null || !token.matches("[A-Za-z0-9_-]{16,256}")) {
        throw new IllegalArgumentException("token must be 16..256 letters, digits, - or _");
      }
      this.token = token;
      return this;
    }

    /**
     * The largest request body; default 16 KiB.
     *
     * @param bytes 1 KiB to 1 MiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is out of range
     */
    public Builder maxBodyBytes(int bytes) {
      if (bytes < 1024 || bytes > 1024 * 1024) {
        throw new IllegalArgumentException("maxBodyBytes must be in 1024..1048576, was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /**
     * Threads answering requests; default 4.
     *
     * @param threads 1 to 64
     * @return this builder
     * @throws IllegalArgumentException if {@code threads} is out of range
     */
    public Builder threads(int threads) {
      if (threads < 1 || threads > 64) {
        throw new IllegalArgumentException("threads must be in 1..64, was " + threads);
      }
      this.threads = threads;
      return this;
    }

    /**
     * The name logged as who ran an action; default {@code operator}.
     *
     * @param principal the name
     * @return this builder
     * @throws NullPointerException if {@code principal} is null
     */
    public Builder principal(String principal) {
      this.principal = Objects.requireNonNull(principal, "principal");
      return this;
    }

    /**
     * Starts the server (and the console's history sampling).
     *
     * @return the running server
     * @throws IOException if the address cannot be bound
     */
    public ConsoleServer start() throws IOException {
      console.start();
      try {
        return new ConsoleServer(this);
      } catch (IOException | RuntimeException e) {
        console.close();
        throw e;
      }
    }
  }
}

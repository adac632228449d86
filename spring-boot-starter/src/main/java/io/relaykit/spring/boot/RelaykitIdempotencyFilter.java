package io.relaykit.spring.boot;

import io.relaykit.idempotency.IdempotencyKeyException;
import io.relaykit.idempotency.IdempotencyKeyProtocol;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Completion;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Decision;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Proceed;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Refuse;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Replay;
import io.relaykit.idempotency.IdempotentAnswer;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import org.springframework.core.Ordered;
import org.springframework.http.server.PathContainer;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.util.ContentCachingResponseWrapper;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * The {@code Idempotency-Key} protocol ({@link IdempotencyKeyProtocol}) as a servlet filter for
 * the configured paths and methods: a missing or invalid key answers 400, a key reused for another
 * request 422, a key whose first request still runs 409, a key processed but whose answer is not
 * kept 410; a repeat of a completed request gets the first answer again (status, the headers in
 * {@link IdempotencyKeyProtocol#REPLAYED_HEADERS}, body) and nothing runs. Errors are {@code
 * application/problem+json}.
 *
 * <p>The fingerprint is SHA-256 over the method, the path with its query, and the body. So the
 * body can be fingerprinted before the handler runs, it is read first, up to {@code
 * maxRequestBytes}: a longer body (or a longer declared {@code Content-Length}) answers 413 and
 * nothing is claimed or run. The handler then reads the buffered copy; form parameters of an
 * {@code application/x-www-form-urlencoded} body are not re-parsed from it, so send such bodies
 * elsewhere. The response is buffered ({@link ContentCachingResponseWrapper}) until the handler
 * returns, then kept and sent: an answer over the protocol's bound is sent in full once and kept
 * without its body (a repeat gets 410).
 *
 * <p>A handler that throws, or a 5xx answer (what Spring MVC's exception handling turns an
 * exception into), releases the key: the client's retry runs again. So does an answer sent with
 * {@link HttpServletResponse#sendError} (a {@code ResponseStatusException} or a framework error
 * such as 400, 404, 405 or 415 that Spring MVC resolves that way, or a handler calling it): its
 * body is written later, by the container's error dispatch (Boot's {@code /error}), outside this
 * filter, so what the filter sees has no body; keeping it would replay a bodiless answer to every
 * retry. It is not kept, the key is released and the client gets the error page as usual; its
 * retry runs the request again (the draft lets a server decline to keep error answers; Stripe
 * keeps nothing for a request refused before it ran). A handler that does work and then calls
 * {@code sendError} is therefore run again on retry: return the error as a body ({@code
 * ResponseEntity}, a {@code ProblemDetail} from an {@code @ExceptionHandler}, or {@code
 * spring.mvc.problemdetails.enabled=true}) when the answer must be kept. Requests that go async are
 * not kept either (the answer is not complete when the filter returns): their key is released and
 * a warning logged; do not put async handlers behind this filter. Answer-store failures after the
 * handler ran do not fail the response (see {@link IdempotencyKeyProtocol#finish}); failures
 * before it answer 500 through the container and run nothing.
 *
 * <p>Keys are scoped to the authenticated user ({@code getUserPrincipal()}): the same key sent by
 * two users is two keys, so one never gets the other's answer or a 409/422 for the other's
 * request; requests without a principal share one key space of their own. The stored key is
 * {@link #scope}'s injective encoding, so no key sent without a principal (or by another user)
 * can name a user's stored key, whatever ':' it holds.
 *
 * <p>Ordered at 0: after Spring Security's filter chain (-100), so a request that is not
 * authenticated does not consume a key.
 */
public final class RelaykitIdempotencyFilter extends OncePerRequestFilter implements Ordered {

  private static final System.Logger LOG =
      System.getLogger(RelaykitIdempotencyFilter.class.getName());

  private final IdempotencyKeyProtocol protocol;
  private final List<PathPattern> paths;
  private final List<PathPattern> excluded;
  private final Set<String> methods;
  private final int maxRequestBytes;

  /**
   * A filter over {@code protocol}.
   *
   * @param protocol the protocol (its stores, lease and bounds)
   * @param paths path patterns in Spring's {@link PathPattern} syntax ({@code /orders/**}),
   *     matched against the path without the context path; not empty
   * @param methods request methods, any case; not empty
   * @param maxRequestBytes the longest request body accepted; positive
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code paths} or {@code methods} is empty, a pattern is
   *     malformed, or {@code maxRequestBytes} is not positive
   */
  public RelaykitIdempotencyFilter(IdempotencyKeyProtocol protocol, List<String> paths,
      List<String> methods, int maxRequestBytes) {
    this(protocol, paths, List.of(), methods, maxRequestBytes);
  }

  /**
   * A filter over {@code protocol} that skips the {@code excluded} paths even where {@code paths}
   * match them (the auto-configuration excludes the Actuator's base path).
   *
   * @param protocol the protocol (its stores, lease and bounds)
   * @param paths path patterns in Spring's {@link PathPattern} syntax ({@code /orders/**}),
   *     matched against the path without the context path; not empty
   * @param excluded path patterns never filtered; may be empty
   * @param methods request methods, any case; not empty
   * @param maxRequestBytes the longest request body accepted; positive
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code paths} or {@code methods} is empty, a pattern is
   *     malformed, or {@code maxRequestBytes} is not positive
   */
  public RelaykitIdempotencyFilter(IdempotencyKeyProtocol protocol, List<String> paths,
      List<String> excluded, List<String> methods, int maxRequestBytes) {
    this.protocol = Objects.requireNonNull(protocol, "protocol");
    if (Objects.requireNonNull(paths, "paths").isEmpty()) {
      throw new IllegalArgumentException("paths must name at least one path pattern");
    }
    if (Objects.requireNonNull(methods, "methods").isEmpty()) {
      throw new IllegalArgumentException("methods must name at least one request method");
    }
    if (maxRequestBytes <= 0) {
      throw new IllegalArgumentException("maxRequestBytes must be positive, was "
          + maxRequestBytes);
    }
    this.paths = parse(paths);
    this.excluded = parse(Objects.requireNonNull(excluded, "excluded"));
    this.methods = methods.stream().map(m -> m.strip().toUpperCase(Locale.ROOT))
        .collect(Collectors.toUnmodifiableSet());
    this.maxRequestBytes = maxRequestBytes;
  }

  @Override
  public int getOrder() {
    return 0;
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    if (!methods.contains(request.getMethod().toUpperCase(Locale.ROOT))) {
      return true;
    }
    PathContainer path = PathContainer.parsePath(pathOf(request));
    for (PathPattern p : excluded) {
      if (p.matches(path)) {
        return true;
      }
    }
    for (PathPattern p : paths) {
      if (p.matches(path)) {
        return false;
      }
    }
    return true;
  }

  static List<PathPattern> parse(List<String> patterns) {
    List<PathPattern> parsed = new ArrayList<>();
    for (String p : patterns) {
      try {
        parsed.add(PathPatternParser.defaultInstance.parse(p.strip()));
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("path pattern '" + p + "' is malformed: "
            + e.getMessage(), e);
      }
    }
    return List.copyOf(parsed);
  }

  private static String pathOf(HttpServletRequest request) {
    String uri = request.getRequestURI();
    String context = request.getContextPath();
    return context != null && uri.startsWith(context) ? uri.substring(context.length()) : uri;
  }

  @Override
  protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response,
      FilterChain chain) throws ServletException, IOException {
    String key;
    try {
      key = scoped(request, protocol.parseKey(request.getHeader(protocol.header())));
    } catch (IdempotencyKeyException e) {
      problem(response, e.status(), e.getMessage());
      return;
    }
    if (request.getContentLengthLong() > maxRequestBytes) {
      problem(response, 413, "the request body must be at most " + maxRequestBytes
          + " bytes on a request with " + protocol.header());
      return;
    }
    byte[] body;
    try (InputStream in = request.getInputStream()) {
      // One byte over the bound tells a longer body apart; no int overflow at Integer.MAX_VALUE.
      body = in.readNBytes((int) Math.min(Integer.MAX_VALUE, maxRequestBytes + 1L));
    }
    if (body.length > maxRequestBytes) {
      problem(response, 413, "the request body must be at most " + maxRequestBytes
          + " bytes on a request with " + protocol.header());
      return;
    }
    String target = pathOf(request)
        + (request.getQueryString() == null ? "" : "?" + request.getQueryString());
    Decision decision = protocol.begin(key,
        IdempotencyKeyProtocol.fingerprint(request.getMethod(), target, body));
    if (decision instanceof Refuse r) {
      problem(response, r.status(), r.message());
      return;
    }
    if (decision instanceof Replay r) {
      replay(response, r.answer());
      return;
    }
    Proceed owned = (Proceed) decision;
    BufferedResponse buffered = new BufferedResponse(response);
    try {
      chain.doFilter(new BufferedRequest(request, body), buffered);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      abandon(owned, e);
      throw e;
    }
    if (request.isAsyncStarted()) {
      LOG.log(System.Logger.Level.WARNING, "request " + target + " went async behind the "
          + protocol.header() + " filter; its answer is not kept and its key is released");
      abandon(owned, null);
      buffered.copyBodyToResponse();
      return;
    }
    if (buffered.errorSent) {
      // The body is the error dispatch's, written after this filter returns: nothing to keep.
      LOG.log(System.Logger.Level.DEBUG, () -> protocol.header() + " " + owned.key() + ": "
          + buffered.getStatus() + " sent with sendError, not kept; the key is released");
      abandon(owned, null);
      buffered.copyBodyToResponse();
      return;
    }
    Completion c = protocol.finish(owned, buffered.getStatus(), headersOf(buffered),
        buffered.getContentAsByteArray());
    if (c != Completion.KEPT && c != Completion.RELEASED) {
      LOG.log(System.Logger.Level.DEBUG, () -> protocol.header() + " " + owned.key() + ": " + c);
    }
    buffered.copyBodyToResponse();
  }

  /**
   * Longest prefix {@link #scope} adds to a key: {@code u:}, 16 hex digits of the principal's
   * SHA-256, {@code :}, the key's length (at most three digits: keys are at most {@link
   * io.relaykit.idempotency.IdempotencyStore#MAX_KEY_LENGTH} characters), {@code :}.
   */
  static final int SCOPE_LENGTH = 23;

  /**
   * The client's key scoped to the authenticated user ({@link HttpServletRequest#getUserPrincipal},
   * which Spring Security sets): keys are unique per client (the draft), so two users sending the
   * same key never share a claim or see each other's answer.
   */
  private static String scoped(HttpServletRequest request, String key) {
    java.security.Principal p = request.getUserPrincipal();
    return scope(p == null ? null : p.getName(), key);
  }

  /**
   * The stored key of {@code key} sent by {@code user} (null: no principal): {@code
   * u:<16 hex digits of SHA-256 of the name's UTF-16 code units, big-endian>:<length of
   * key>:<key>} for a user, {@code a:<length of
   * key>:<key>} without one. Each scope kind has a prefix of its own and every part after it
   * is of fixed length or length-prefixed, so the encoding is injective: no key sent in one
   * scope, whatever ':' it holds, spells a key of another scope or of another user. Public so
   * an operator can find a client's claim and answer (under the protocol's namespace).
   *
   * @param user the principal's name, or null for a request without one
   * @param key the client's key, as {@link IdempotencyKeyProtocol#parseKey} returned it
   * @return the key the claim and the answer are stored under (before the namespace)
   * @throws NullPointerException if {@code key} is null
   */
  public static String scope(String user, String key) {
    String counted = key.length() + ":" + key;
    if (user == null) {
      return "a:" + counted;
    }
    // The name's UTF-16 code units, two bytes each: a charset encoder replaces every unpaired
    // surrogate ('?' in UTF-8, U+FFFD in UTF-16), so "bob\uD800" and "bob?" would share a scope.
    byte[] name = new byte[2 * user.length()];
    for (int i = 0; i < user.length(); i++) {
      char c = user.charAt(i);
      name[2 * i] = (byte) (c >>> 8);
      name[2 * i + 1] = (byte) c;
    }
    return "u:" + io.relaykit.internal.Digests.hex(
        io.relaykit.internal.Digests.sha256().digest(name), 8) + ":" + counted;
  }

  private void abandon(Proceed owned, Throwable cause) {
    try {
      protocol.abandon(owned);
    } catch (RuntimeException e) {
      if (cause != null) {
        cause.addSuppressed(e);
      } else {
        LOG.log(System.Logger.Level.WARNING, "releasing " + protocol.header() + " "
            + owned.key() + " failed; it is retryable when its lease lapses", e);
      }
    }
  }

  private static Map<String, List<String>> headersOf(ContentCachingResponseWrapper response) {
    Map<String, List<String>> headers = new LinkedHashMap<>();
    for (String name : response.getHeaderNames()) {
      headers.putIfAbsent(name, List.copyOf(response.getHeaders(name)));
    }
    if (response.getContentType() != null && headers.keySet().stream()
        .noneMatch(n -> n.equalsIgnoreCase("Content-Type"))) {
      headers.put("Content-Type", List.of(response.getContentType()));
    }
    return headers;
  }

  private static void replay(HttpServletResponse response, IdempotentAnswer answer)
      throws IOException {
    response.setStatus(answer.status());
    answer.headers().forEach((name, values) -> values.forEach(v -> response.addHeader(name, v)));
    byte[] body = answer.body();
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  private static void problem(HttpServletResponse response, int status, String detail)
      throws IOException {
    response.setStatus(status);
    response.setContentType("application/problem+json");
    response.setHeader("Cache-Control", "no-store");
    byte[] body = ("{\"type\":\"about:blank\",\"status\":" + status + ",\"detail\":\""
        + jsonEscape(detail) + "\"}").getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  private static String jsonEscape(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** The buffered response, noting whether the answer was sent with {@code sendError}. */
  private static final class BufferedResponse extends ContentCachingResponseWrapper {
    private boolean errorSent;

    BufferedResponse(HttpServletResponse response) {
      super(response);
    }

    @Override
    public void sendError(int sc) throws IOException {
      errorSent = true;
      super.sendError(sc);
    }

    @Override
    public void sendError(int sc, String msg) throws IOException {
      errorSent = true;
      super.sendError(sc, msg);
    }
  }

  /** The request with its body already read: the handler reads the buffered copy. */
  private static final class BufferedRequest extends HttpServletRequestWrapper {
    private final byte[] body;

    BufferedRequest(HttpServletRequest request, byte[] body) {
      super(request);
      this.body = body;
    }

    @Override
    public ServletInputStream getInputStream() {
      ByteArrayInputStream in = new ByteArrayInputStream(body);
      return new ServletInputStream() {
        @Override
        public int read() {
          return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) {
          return in.read(b, off, len);
        }

        @Override
        public boolean isFinished() {
          return in.available() == 0;
        }

        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setReadListener(ReadListener listener) {
          throw new UnsupportedOperationException("the body is buffered; read it blocking");
        }
      };
    }

    @Override
    public BufferedReader getReader() {
      String enc = getCharacterEncoding();
      Charset cs = enc == null ? StandardCharsets.UTF_8 : Charset.forName(enc);
      return new BufferedReader(new InputStreamReader(getInputStream(), cs));
    }

    @Override
    public int getContentLength() {
      return body.length;
    }

    @Override
    public long getContentLengthLong() {
      return body.length;
    }
  }
}

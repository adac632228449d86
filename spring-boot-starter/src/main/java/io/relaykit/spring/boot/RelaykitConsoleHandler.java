package io.relaykit.spring.boot;

import io.relaykit.console.Console;
import io.relaykit.console.ConsoleRequest;
import io.relaykit.console.ConsoleResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.HttpRequestHandler;
import org.springframework.web.util.UrlPathHelper;

/**
 * Serves the operator console under its path through Spring MVC: turns each servlet request into
 * a {@link ConsoleRequest} (method, path under the console's root, query and form parameters, the
 * signed-in user's name, and Spring Security's CSRF parameter name and token for the forms) and
 * writes the {@link ConsoleResponse} back as it is.
 *
 * <p>It checks one thing itself: that the application's security let only an authenticated user
 * through. A request without one ({@link HttpServletRequest#getUserPrincipal()} is null, as it is
 * for Spring Security's anonymous user) is refused with 403 and a page saying how to protect the
 * path; a warning is logged once. Everything else (who may see, who may act, CSRF) is the
 * application's {@code SecurityFilterChain}'s. Thread-safe.
 */
final class RelaykitConsoleHandler implements HttpRequestHandler {

  private static final System.Logger LOG = System.getLogger(RelaykitConsoleHandler.class
      .getName());
  private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

  private final Supplier<Console> console;
  private final String path;
  private final AtomicBoolean warned = new AtomicBoolean();

  /**
   * A handler for the console served under {@code path}.
   *
   * @param console the console, looked up at each request (built on first use)
   * @param path the console's path in the application, as checked by {@link
   *     RelaykitConsoleSettings#path}
   */
  RelaykitConsoleHandler(Supplier<Console> console, String path) {
    this.console = Objects.requireNonNull(console, "console");
    this.path = Objects.requireNonNull(path, "path");
  }

  @Override
  public void handleRequest(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    Principal user = request.getUserPrincipal();
    if (user == null) {
      if (warned.compareAndSet(false, true)) {
        LOG.log(System.Logger.Level.WARNING, "relaykit console: a request to " + path
            + " reached the console without an authenticated user, and was refused; the"
            + " application's SecurityFilterChain must require authentication (a role) for "
            + path + "/** (logged once)");
      }
      write(response, request.getMethod(), refusal());
      return;
    }
    String within = PATHS.getPathWithinApplication(request);
    String sub = within.length() <= path.length() ? "/" : within.substring(path.length());
    if (!sub.startsWith("/")) {
      sub = "/" + sub;
    }
    Map<String, List<String>> parameters = new LinkedHashMap<>();
    request.getParameterMap().forEach((k, v) -> parameters.put(k, Arrays.asList(v)));
    String csrfParameter = null;
    String csrfToken = null;
    if (request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken token) {
      csrfParameter = token.getParameterName();
      csrfToken = token.getToken();
    }
    ConsoleRequest r = new ConsoleRequest(request.getMethod().toUpperCase(Locale.ROOT),
        request.getContextPath() + path, sub, parameters, user.getName(), csrfParameter,
        csrfToken);
    write(response, request.getMethod(), console.get().handle(r));
  }

  private ConsoleResponse refusal() {
    String body = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>relaykit console"
        + "</title></head><body><h1>Sign-in required</h1><p>relaykit's console answers only"
        + " authenticated users. The application's Spring Security configuration must require"
        + " authentication, ideally a role, for this path (see the Spring Boot guide: securing"
        + " the console).</p></body></html>";
    return new ConsoleResponse(403, ConsoleResponse.HTML, body, Map.of("Cache-Control",
        "no-store", "X-Content-Type-Options", "nosniff"));
  }

  private static void write(HttpServletResponse response, String method, ConsoleResponse r)
      throws IOException {
    response.setStatus(r.status());
    r.headers().forEach(response::setHeader);
    response.setContentType(r.contentType());
    byte[] body = r.body().getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    if (!"HEAD".equalsIgnoreCase(method)) {
      response.getOutputStream().write(body);
    }
  }

  @Override
  public String toString() {
    return "RelaykitConsoleHandler[" + path + "]";
  }
}

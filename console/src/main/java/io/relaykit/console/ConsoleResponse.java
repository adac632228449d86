package io.relaykit.console;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The console's answer to one request: a status, a content type, a body and extra headers, for
 * the host to write as they are.
 *
 * @param status the HTTP status
 * @param contentType the body's content type ({@code text/html; charset=utf-8} for pages)
 * @param body the body, UTF-8 when written; empty for a redirect
 * @param headers extra headers ({@code Location} of a redirect, {@code Cache-Control}, the
 *     security headers every page carries); copied
 */
public record ConsoleResponse(int status, String contentType, String body,
    Map<String, String> headers) {

  /** The content type of every page. */
  public static final String HTML = "text/html; charset=utf-8";

  /**
   * Checks and copies the parts.
   *
   * @param status the component of that name
   * @param contentType the component of that name
   * @param body the component of that name
   * @param headers the component of that name
   * @throws NullPointerException if a part is null
   * @throws IllegalArgumentException if {@code status} is not in 100..599
   */
  public ConsoleResponse {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be in 100..599, was " + status);
    }
    Objects.requireNonNull(contentType, "contentType");
    Objects.requireNonNull(body, "body");
    headers = Map.copyOf(headers);
  }

  static ConsoleResponse html(int status, String body) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("Cache-Control", "no-store");
    h.put("X-Content-Type-Options", "nosniff");
    h.put("X-Frame-Options", "DENY");
    // No script and no external resource: a policy that allows neither costs the pages nothing.
    h.put("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src"
        + " data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    h.put("Referrer-Policy", "no-referrer");
    return new ConsoleResponse(status, HTML, body, h);
  }

  static ConsoleResponse redirect(String location) {
    return new ConsoleResponse(303, "text/plain; charset=utf-8", "",
        Map.of("Location", location, "Cache-Control", "no-store"));
  }

  /** {@return the body as UTF-8 bytes} */
  public byte[] bodyBytes() {
    return body.getBytes(StandardCharsets.UTF_8);
  }
}

package io.relaykit.poller;

import java.util.Map;
import java.util.Objects;

/**
 * An HTTP response, independent of any server framework: write its status, headers and body with
 * whatever serves your endpoints.
 *
 * @param status the HTTP status code
 * @param headers response headers (single values)
 * @param body the response body (JSON)
 */
public record HttpAnswer(int status, Map<String, String> headers, String body) {
  /**
   * Validates the answer: a status code from 100 to 599; headers copied.
   *
   * @param status the HTTP status code
   * @param headers response headers (single values)
   * @param body the response body (JSON)
   * @throws IllegalArgumentException if {@code status} is not an HTTP status code
   */
  public HttpAnswer {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be an HTTP status code, was " + status);
    }
    headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
    Objects.requireNonNull(body, "body");
  }
}

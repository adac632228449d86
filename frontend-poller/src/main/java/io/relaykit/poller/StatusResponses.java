package io.relaykit.poller;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The server side of the status contract: what a submit endpoint and a status endpoint answer.
 *
 * <ul>
 *   <li>Submit: {@code 202 Accepted}, {@code Location} = the status URL, {@code Retry-After} =
 *       when a poll is first worth it, body {@code {"<idField>": id, "status": "PENDING"}}. Never
 *       {@code 200 OK}: the work is not done yet.
 *   <li>Status: {@code 200} with the {@link StatusDocument}; {@code Retry-After} while the job is
 *       not terminal, so pollers slow down when the server asks; {@code Cache-Control: no-store}.
 * </ul>
 * Stateless; each method is O(size of the document).
 */
public final class StatusResponses {

  private static final String JSON = "application/json; charset=utf-8";

  private final String idField;

  /**
   * Reads and writes status bodies whose job id is in {@code idField}.
   *
   * @param idField the JSON field that carries the job id ({@code "orderId"})
   * @throws IllegalArgumentException if {@code idField} is blank
   */
  public StatusResponses(String idField) {
    if (idField == null || idField.isBlank()) {
      throw new IllegalArgumentException("idField must not be blank");
    }
    this.idField = idField;
  }

  /**
   * {@code 202 Accepted} for a job that was stored and will be processed.
   *
   * @param id the job id
   * @param statusUrl where the client polls
   * @param retryAfter when to poll first; positive, rounded up to whole seconds
   * @return the answer, with {@code Location}, {@code Retry-After} and a {@code PENDING} document
   */
  public HttpAnswer accepted(String id, URI statusUrl, Duration retryAfter) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("id must not be blank");
    }
    if (statusUrl == null) {
      throw new IllegalArgumentException("statusUrl must not be null");
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", JSON);
    headers.put("Location", statusUrl.toString());
    headers.put("Retry-After", Long.toString(retryAfterSeconds(retryAfter)));
    headers.put("Cache-Control", "no-store");
    String body = new StatusDocument(id, JobStatus.PENDING, null, null).toJson(idField);
    return new HttpAnswer(202, headers, body);
  }

  /**
   * {@code 200} with the job's status; {@code Retry-After} only while it is not terminal.
   *
   * @param document the job's status
   * @param retryAfter when to poll again; positive, rounded up to whole seconds
   * @return the answer
   */
  public HttpAnswer status(StatusDocument document, Duration retryAfter) {
    if (document == null) {
      throw new IllegalArgumentException("document must not be null");
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", JSON);
    headers.put("Cache-Control", "no-store");
    if (!document.status().isTerminal()) {
      headers.put("Retry-After", Long.toString(retryAfterSeconds(retryAfter)));
    }
    return new HttpAnswer(200, headers, document.toJson(idField));
  }

  /**
   * A JSON error answer: {@code {"error": message}}.
   *
   * @param status a 4xx or 5xx code
   * @param message the error; null gives an empty string
   * @return the answer
   */
  public HttpAnswer error(int status, String message) {
    if (status < 400 || status > 599) {
      throw new IllegalArgumentException("status must be a 4xx or 5xx code, was " + status);
    }
    String body = JsonNodeFactory.instance.objectNode()
        .put("error", message == null ? "" : message).toString();
    return new HttpAnswer(status, Map.of("Content-Type", JSON, "Cache-Control", "no-store"), body);
  }

  /** Whole seconds, rounded up, at least 1: {@code Retry-After} has second resolution. */
  static long retryAfterSeconds(Duration retryAfter) {
    if (retryAfter == null || retryAfter.isNegative() || retryAfter.isZero()) {
      throw new IllegalArgumentException("retryAfter must be a positive duration, was "
          + retryAfter);
    }
    long seconds = retryAfter.getSeconds() + (retryAfter.getNano() > 0 ? 1 : 0);
    return Math.max(1, seconds);
  }
}

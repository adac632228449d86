package io.relaykit.poller;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.Optional;

/**
 * A job's status as the status URL reports it:
 * {@code {"<idField>": "...", "status": "PROCESSING", "updatedAt": "...", "error": "..."}}.
 * The id field's name is the application's ({@code orderId}, {@code jobId}); {@code error} is
 * present only for {@link JobStatus#FAILED}.
 *
 * @param id the job id
 * @param status where the job stands
 * @param updatedAt when the status last changed; null if unknown
 * @param error why a failed job failed; null otherwise
 */
public record StatusDocument(String id, JobStatus status, Instant updatedAt, String error) {

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Validates the document.
   *
   * @param id the job id
   * @param status where the job stands
   * @param updatedAt when the status last changed; null if unknown
   * @param error why a failed job failed; null otherwise
   * @throws NullPointerException if {@code status} is null
   */
  public StatusDocument {
    Objects.requireNonNull(status, "status");
  }

  /**
   * Why a failed job failed.
   *
   * @return the error, or empty when the job has not failed
   */
  public Optional<String> errorMessage() {
    return Optional.ofNullable(error);
  }

  /**
   * This document as JSON, with the id under {@code idField}.
   *
   * @param idField the JSON field that carries the id
   * @return the JSON object
   */
  public String toJson(String idField) {
    ObjectNode node = JSON.createObjectNode();
    if (id != null) {
      node.put(idField, id);
    }
    node.put("status", status.name());
    if (updatedAt != null) {
      node.put("updatedAt", updatedAt.toString());
    }
    if (error != null) {
      node.put("error", error);
    }
    return node.toString();
  }

  /**
   * Reads a status document. The id is taken from {@code idField} when present.
   *
   * @param json the response body
   * @param idField the JSON field that carries the id
   * @return the document
   * @throws IllegalArgumentException naming what is wrong: not JSON, no {@code status}, an unknown
   *     status, an {@code updatedAt} that is not an ISO-8601 instant
   */
  public static StatusDocument parse(String json, String idField) {
    JsonNode node;
    try {
      node = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("status document is not JSON: " + e.getOriginalMessage(),
          e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException("status document must be a JSON object");
    }
    JsonNode status = node.get("status");
    if (status == null || !status.isTextual()) {
      throw new IllegalArgumentException("status document has no text field \"status\"");
    }
    JobStatus parsed;
    try {
      parsed = JobStatus.valueOf(status.asText());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown status \"" + status.asText() + "\"", e);
    }
    Instant updatedAt = null;
    JsonNode updated = node.get("updatedAt");
    if (updated != null && !updated.isNull()) {
      try {
        updatedAt = Instant.parse(updated.asText());
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("updatedAt is not an instant: " + updated.asText(), e);
      }
    }
    JsonNode id = node.get(idField);
    JsonNode error = node.get("error");
    return new StatusDocument(
        id == null || id.isNull() ? null : id.asText(),
        parsed,
        updatedAt,
        error == null || error.isNull() ? null : error.asText());
  }
}

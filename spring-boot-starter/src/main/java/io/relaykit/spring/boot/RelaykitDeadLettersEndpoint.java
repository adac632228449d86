package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * The actuator endpoint {@code relaykitdeadletters}: lists relaykit's dead letters and replays one.
 *
 * <p><b>Which dead letters.</b> The application's one {@link DeadLetterStore} bean: the storage's
 * (relaykit-jdbc's table with {@code relaykit.storage=h2}, else in memory). It holds what the
 * relay dead-letters and, on the in-process transport, what subscriptions dead-letter. It does
 * <em>not</em> list Kafka dead-letter topics or RabbitMQ dead-letter queues: with {@code
 * relaykit.transport=kafka} or {@code rabbitmq} a subscription's dead letters are in its group's
 * topic or queue, read with {@code KafkaDeadLetterStore.forSubscription} or {@code
 * RabbitMqDeadLetterStore.create} (one store per destination and group; see the starter's README).
 *
 * <ul>
 *   <li>{@code GET /actuator/relaykitdeadletters?messageId=&source=&group=&type=&reason=
 *       &failedFrom=&failedBefore=&offset=&limit=}: one page of the {@link DeadLetterStore},
 *       ordered by last failure then id, with {@code total} (how many match, paging aside). Every
 *       filter is optional and they combine with AND ({@link DeadLetterQuery}); {@code reason} is
 *       a case-sensitive substring, times are ISO-8601 instants. {@code limit} defaults to 20 and
 *       is at most {@code relaykit.spring.dead-letters.max-limit} (100). Entries carry no payload
 *       (its size only) and no headers; the reason and the exception message are cut at 1 000
 *       characters. Listing never counts as a delivery.
 *   <li>{@code POST /actuator/relaykitdeadletters} with {@code {"id": "<dead letter id>"}}: moves
 *       the dead letter back into the outbox (atomically on JDBC storage), from where the relay
 *       publishes it to its source again with its message id and trace id. 200 {@code
 *       {"replayed": id, ...}}; 404 when there is no such dead letter (already replayed or purged:
 *       replaying twice resends once); 409 while another replay of it is under way. 200 with
 *       {@code "markLapsed": true} and a {@code warning} when the message was resent but the
 *       replay's mark lapsed meanwhile: another replay may also have sent it. Replay resends: a dead letter of a consumer group goes back
 *       to its source topic or queue, so <em>every</em> group of that destination receives it
 *       again with the same message id. Only idempotent handlers ({@link
 *       RelaykitListener#idempotent()}, or a handler that deduplicates itself) make that safe; a
 *       non-idempotent handler of another group runs it a second time.
 * </ul>
 *
 * <p>Bad input (blank id, a limit over the maximum, a negative offset, an unreadable time) is
 * 400 with an {@code error} message naming the parameter. A store or outbox that fails (database
 * down, outbox bound refusing the append) is 503 with the error; nothing changes then, except
 * when a replay through the application's {@code ReplayTarget} resent the message and only the
 * removal of the dead letter failed: that 503 carries {@code "resent": true}.
 *
 * <p>Exposure and security are Spring Boot's: the endpoint is not exposed over HTTP until {@code
 * management.endpoints.web.exposure.include} names it, and with Spring Security on the class path
 * it is guarded by the application's rules (Boot's default chain lets only authenticated users
 * reach any endpoint but health, and its CSRF protection refuses a POST without a token).
 */
@WebEndpoint(id = RelaykitDeadLettersEndpoint.ID)
public class RelaykitDeadLettersEndpoint {

  /** The endpoint's id, as in {@code /actuator/relaykitdeadletters}. */
  public static final String ID = "relaykitdeadletters";
  /** The page size when {@code limit} is not given (or the maximum, if that is smaller). */
  public static final int DEFAULT_LIMIT = 20;
  /** The longest reason or exception message listed; longer ones are cut. */
  static final int MAX_TEXT = 1000;

  private final DeadLetterStore store;
  private final Replay replay;
  private final int maxLimit;

  /**
   * An endpoint over {@code store}.
   *
   * @param store where the dead letters are
   * @param replay moves one back to be resent
   * @param maxLimit the largest page; {@code 1..DeadLetterQuery.MAX_LIMIT}
   * @throws NullPointerException if {@code store} or {@code replay} is null
   * @throws IllegalArgumentException if {@code maxLimit} is out of range
   */
  RelaykitDeadLettersEndpoint(DeadLetterStore store, Replay replay, int maxLimit) {
    this.store = Objects.requireNonNull(store, "store");
    this.replay = Objects.requireNonNull(replay, "replay");
    if (maxLimit < 1 || maxLimit > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(SpringConfigKeys.DEAD_LETTERS_MAX_LIMIT + " must be in 1.."
          + DeadLetterQuery.MAX_LIMIT + ", was " + maxLimit);
    }
    this.maxLimit = maxLimit;
  }

  /**
   * One page of dead letters.
   *
   * @param messageId exact message id, or null
   * @param source exact source (outbox destination, topic or queue), or null
   * @param group exact consumer group, or null
   * @param type exact message type, or null
   * @param reason substring of the reason, or null
   * @param failedFrom ISO-8601 instant, inclusive lower bound of the last failure, or null
   * @param failedBefore ISO-8601 instant, exclusive upper bound of the last failure, or null
   * @param offset entries to skip, {@code >= 0}; default 0
   * @param limit page size, {@code 1..max-limit}; default 20
   * @return 200 with {@code total}, {@code offset}, {@code limit} and {@code deadLetters}; 400
   *     naming a bad parameter; 503 when the store fails
   */
  @ReadOperation
  public WebEndpointResponse<Map<String, Object>> list(@Nullable String messageId,
      @Nullable String source, @Nullable String group, @Nullable String type,
      @Nullable String reason, @Nullable String failedFrom, @Nullable String failedBefore,
      @Nullable Integer offset, @Nullable Integer limit) {
    int page = limit == null ? Math.min(DEFAULT_LIMIT, maxLimit) : limit;
    int skip = offset == null ? 0 : offset;
    if (page < 1 || page > maxLimit) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, "limit must be in 1.." + maxLimit
          + " (" + SpringConfigKeys.DEAD_LETTERS_MAX_LIMIT + "), was " + page);
    }
    if (skip < 0) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, "offset must be >= 0, was " + skip);
    }
    DeadLetterQuery query;
    try {
      query = new DeadLetterQuery(blankToNull(messageId), blankToNull(reason), blankToNull(type),
          blankToNull(source), blankToNull(group), instant("failedFrom", failedFrom),
          instant("failedBefore", failedBefore), skip, page);
    } catch (IllegalArgumentException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    }
    List<DeadLetter> found;
    long total;
    try {
      found = store.list(query);
      total = store.count(query);
    } catch (RuntimeException e) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE,
          "relaykit could not list dead letters: " + e.getMessage());
    }
    List<Map<String, Object>> entries = new ArrayList<>(found.size());
    for (DeadLetter d : found) {
      entries.add(json(d));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("total", total);
    body.put("offset", skip);
    body.put("limit", page);
    body.put("deadLetters", entries);
    return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
  }

  /**
   * Replays one dead letter into the outbox.
   *
   * @param id the dead letter's id, as listed; not blank
   * @return 200 with {@code replayed} (the id), {@code messageId} and {@code destination}; 400 for
   *     a blank id; 404 when there is none; 503 when the store or the outbox fails (the dead
   *     letter stays where it was; with {@code "resent": true} when the message was resent but
   *     the dead letter could not be removed: it stays, and a replay after the mark's lease
   *     resends it again); 409 while another replay of it is under way; 422 when its
   *     message cannot go back into the outbox. A replay that resent the message but whose replay
   *     mark had lapsed meanwhile (its resend outlasted the lease, and another replay took the
   *     dead letter over) is 200 with {@code "markLapsed": true} and a {@code warning}: the mark
   *     lapsed, and another replay may also have sent it
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> replay(@Nullable String id) {
    if (id == null || id.isBlank()) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST,
          "id must be a dead letter's id, as listed; was " + (id == null ? "missing" : "blank"));
    }
    Optional<DeadLetter> replayed;
    try {
      replayed = replay.replay(id);
    } catch (io.relaykit.deadletter.ReplayMarkLapsedException e) {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("replayed", id);
      body.put("messageId", e.deadLetter().messageId());
      body.put("destination", e.deadLetter().source());
      body.put("markLapsed", true);
      body.put("warning", e.getMessage());
      return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
    } catch (io.relaykit.deadletter.ReplayInProgressException e) {
      return error(409, e.getMessage());
    } catch (io.relaykit.deadletter.DeadLetterReplayer.ReplayException e) {
      if (!e.resent()) {
        return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, "replay of dead letter " + id
            + " failed, it was left in place: " + e.getMessage());
      }
      WebEndpointResponse<Map<String, Object>> r =
          error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, e.getMessage());
      r.getBody().put("resent", true);
      return r;
    } catch (IllegalArgumentException e) {
      return error(422, "dead letter " + id + " cannot go back into the outbox: "
          + e.getMessage());
    } catch (RuntimeException e) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, "replay of dead letter " + id
          + " failed, it was left in place: " + e.getMessage());
    }
    if (replayed.isEmpty()) {
      return error(WebEndpointResponse.STATUS_NOT_FOUND,
          "no dead letter " + id + " (already replayed or purged)");
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("replayed", id);
    body.put("messageId", replayed.get().messageId());
    body.put("destination", replayed.get().source());
    return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
  }

  private static Map<String, Object> json(DeadLetter d) {
    Map<String, Object> n = new LinkedHashMap<>();
    n.put("id", d.id());
    n.put("messageId", d.messageId());
    n.put("type", d.message().type());
    n.put("key", d.message().key().orElse(null));
    n.put("source", d.source());
    n.put("group", d.group());
    n.put("reason", cut(d.reason()));
    n.put("exceptionClass", d.exceptionClass());
    n.put("exceptionMessage", cut(d.exceptionMessage()));
    n.put("attempts", d.attempts());
    n.put("firstFailureAt", d.firstFailureAt().toString());
    n.put("lastFailureAt", d.lastFailureAt().toString());
    n.put("traceId", d.message().traceId());
    n.put("payloadBytes", d.message().payloadSize());
    return n;
  }

  private static String cut(String s) {
    return s == null || s.length() <= MAX_TEXT ? s : s.substring(0, MAX_TEXT) + "...";
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static Instant instant(String name, String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    try {
      return Instant.parse(value.strip());
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(name + " must be an ISO-8601 instant such as"
          + " 2026-12-03T14:00:00Z, was '" + value + "'", e);
    }
  }

  private static WebEndpointResponse<Map<String, Object>> error(int status, String message) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", status);
    body.put("error", message);
    return new WebEndpointResponse<>(body, status);
  }

  /** Takes a dead letter out of the store and makes it durable where it is resent. */
  @FunctionalInterface
  interface Replay {
    /**
     * Replays one dead letter.
     *
     * @param id its id; not blank
     * @return the replayed dead letter, or empty if there was none
     */
    Optional<DeadLetter> replay(String id);
  }
}

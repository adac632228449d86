package io.relaykit.spring.boot;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * The actuator endpoint {@code relaykitdeadletters}: lists the dead letters of every store the
 * application has, replays one through the store that holds it, and purges one where that store
 * can remove it.
 *
 * <p><b>Which stores.</b> Every listed dead letter names its {@code store}:
 * <ul>
 *   <li>{@code "relaykit"}: the application's one {@link DeadLetterStore} bean (relaykit-jdbc's
 *       table with {@code relaykit.storage=h2}, else in memory). It holds what the relay
 *       dead-letters and, on the in-process transport, what subscriptions dead-letter.
 *   <li>{@code "kafka:<dead-letter topic>"}: with {@code relaykit.transport=kafka}, the
 *       dead-letter topic of each {@link RelaykitListener} subscription (destination and group),
 *       read through {@code KafkaDeadLetterStore.forSubscription}.
 *   <li>{@code "rabbitmq:<dead-letter queue>"}: with {@code relaykit.transport=rabbitmq}, the
 *       dead-letter queue of each {@link RelaykitListener} subscription, read through {@code
 *       RabbitMqDeadLetterStore}.
 * </ul>
 * A broker store is opened on the first request that needs it (a Kafka producer; a RabbitMQ
 * connection and publisher, after declaring the group's topology) and closed with the
 * application. Subscriptions the application opens itself on the {@code Subscriber}, without
 * {@link RelaykitListener}, are not listed.
 *
 * <ul>
 *   <li>{@code GET /actuator/relaykitdeadletters?messageId=&source=&group=&type=&reason=
 *       &failedFrom=&failedBefore=&exceptionClass=&newestFirst=&store=&offset=&limit=}: one page
 *       of the dead letters of every store (or of the one {@code store} names), ordered by last
 *       failure then id (then store), newest first with {@code newestFirst=true},
 *       with {@code total} (how many match, paging aside) and {@code stores}: per store its
 *       {@code total}, whether it can {@code purge}, who decides its {@code retention} when that
 *       is not relaykit, and the {@code error} when it could not be read. Every filter is optional
 *       and they combine with AND ({@link DeadLetterQuery}); {@code reason} is a case-sensitive
 *       substring, {@code exceptionClass} an exact class name, times are ISO-8601 instants. {@code limit} defaults to 20 and is at most
 *       {@code relaykit.spring.dead-letters.max-limit} (100); over several stores {@code
 *       offset + limit} is at most {@value #MAX_MERGED} (each store is read up to there and the
 *       pages merged). Entries carry no payload (its size only) and no headers; the reason and
 *       the exception message are cut at 1 000 characters. Listing never counts as a delivery.
 *       Cost: a Kafka store scans its topic from the beginning, a RabbitMQ store browses its
 *       whole queue, twice per request (page and count): meant for operators.
 *   <li>{@code POST /actuator/relaykitdeadletters} with {@code {"id": "<dead letter id>"}} (and
 *       optionally {@code "store"}, as listed): replays it through the store that holds it
 *       (without {@code store}: relaykit's first, then each broker store in turn). From relaykit's
 *       store the dead letter moves back into the outbox (atomically on JDBC storage), from where
 *       the relay publishes it to its source again with its message id and trace id. From a
 *       Kafka dead-letter topic it is resent to the group's retry topic and hidden by a replay
 *       marker; from a RabbitMQ dead-letter queue it is resent to the group's queue and removed;
 *       either way only that group handles it again. 200 {@code {"replayed": id, "store": ...,
 *       ...}}; 404 when there is no such dead letter (already replayed or purged: replaying twice
 *       resends once); 409 while another replay of it is under way (for a broker store: in this
 *       application). 200 with {@code "markLapsed": true} and a {@code warning} when the message
 *       was resent but the replay's mark lapsed meanwhile: another replay may also have sent it.
 *       A dead letter of relaykit's store that belongs to a consumer group goes back to its source
 *       topic or queue, so <em>every</em> group of that destination receives it again with the
 *       same message id. Only idempotent handlers ({@link RelaykitListener#idempotent()}, or a
 *       handler that deduplicates itself) make that safe; a non-idempotent handler of another
 *       group runs it a second time.
 *   <li>{@code DELETE /actuator/relaykitdeadletters?id=&store=}: removes one dead letter without
 *       replaying it, where its store can remove single entries (relaykit's, RabbitMQ's). 200
 *       {@code {"purged": id, "store": ...}}; 404 when there is none; 409 with the reason for a
 *       Kafka dead-letter topic: a topic cannot delete one record, retention is the broker's
 *       ({@code retention.ms} or {@code retention.bytes} on the topic), and a replay hides an
 *       entry. A purge does not wait for a replay of the same dead letter that is under way.
 * </ul>
 *
 * <p>Bad input (blank id, a limit over the maximum, a negative offset, an unreadable time, an
 * unknown store) is 400 with an {@code error} message naming the parameter. A store or outbox
 * that fails (database down, broker unreachable, outbox bound refusing the append) is 503 with
 * the error, and nothing changes then; a listing over several stores of which some fail is 200
 * with the others, {@code "incomplete": true}, and the failed stores' {@code error}. A replay
 * through the application's {@code ReplayTarget} that resent the message but could not remove
 * the dead letter is 503 with {@code "resent": true}.
 *
 * <p>Exposure and security are Spring Boot's: the endpoint is not exposed over HTTP until {@code
 * management.endpoints.web.exposure.include} names it, and with Spring Security on the class path
 * it is guarded by the application's rules (Boot's default chain lets only authenticated users
 * reach any endpoint but health, and its CSRF protection refuses a POST or DELETE without a
 * token).
 */
@WebEndpoint(id = RelaykitDeadLettersEndpoint.ID)
public class RelaykitDeadLettersEndpoint {

  /** The endpoint's id, as in {@code /actuator/relaykitdeadletters}. */
  public static final String ID = "relaykitdeadletters";
  /** The page size when {@code limit} is not given (or the maximum, if that is smaller). */
  public static final int DEFAULT_LIMIT = 20;
  /** The {@code store} name of the application's own {@link DeadLetterStore}. */
  public static final String RELAYKIT_STORE = "relaykit";
  /** The largest {@code offset + limit} of a listing over several stores. */
  public static final int MAX_MERGED = 10_000;
  /** The longest reason or exception message listed; longer ones are cut. */
  static final int MAX_TEXT = 1000;

  private final DeadLetterSources sources;
  private final DeadLetterSource relaykit;
  private final int maxLimit;
  /** Broker replays under way in this application: store name and id. */
  private final Set<List<String>> replaying = ConcurrentHashMap.newKeySet();

  /**
   * An endpoint over {@code store} alone.
   *
   * @param store where the dead letters are
   * @param replay moves one back to be resent
   * @param maxLimit the largest page; {@code 1..DeadLetterQuery.MAX_LIMIT}
   * @throws NullPointerException if {@code store} or {@code replay} is null
   * @throws IllegalArgumentException if {@code maxLimit} is out of range
   */
  RelaykitDeadLettersEndpoint(DeadLetterStore store, Replay replay, int maxLimit) {
    this(store, replay, List::of, maxLimit);
  }

  /**
   * An endpoint over {@code store} and the broker stores {@code brokers} gives at each request.
   *
   * @param store where relaykit's dead letters are
   * @param replay moves one of them back to be resent
   * @param brokers the broker stores (dead-letter topics and queues), asked at each request
   * @param maxLimit the largest page; {@code 1..DeadLetterQuery.MAX_LIMIT}
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code maxLimit} is out of range
   */
  RelaykitDeadLettersEndpoint(DeadLetterStore store, Replay replay,
      Supplier<List<DeadLetterSource>> brokers, int maxLimit) {
    this(new DeadLetterSources(store, replay, brokers), maxLimit);
  }

  /**
   * An endpoint over the application's dead-letter stores.
   *
   * @param sources the stores, relaykit's first (shared with the operator console)
   * @param maxLimit the largest page; {@code 1..DeadLetterQuery.MAX_LIMIT}
   * @throws NullPointerException if {@code sources} is null
   * @throws IllegalArgumentException if {@code maxLimit} is out of range
   */
  RelaykitDeadLettersEndpoint(DeadLetterSources sources, int maxLimit) {
    this.sources = Objects.requireNonNull(sources, "sources");
    this.relaykit = sources.relaykit();
    if (maxLimit < 1 || maxLimit > DeadLetterQuery.MAX_LIMIT) {
      throw new IllegalArgumentException(SpringConfigKeys.DEAD_LETTERS_MAX_LIMIT + " must be in 1.."
          + DeadLetterQuery.MAX_LIMIT + ", was " + maxLimit);
    }
    this.maxLimit = maxLimit;
  }

  /**
   * One page of the dead letters of every store; as {@link #list(String, String, String, String,
   * String, String, String, String, Integer, Integer)} without a {@code store}.
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
   * @return as the full listing
   */
  public WebEndpointResponse<Map<String, Object>> list(@Nullable String messageId,
      @Nullable String source, @Nullable String group, @Nullable String type,
      @Nullable String reason, @Nullable String failedFrom, @Nullable String failedBefore,
      @Nullable Integer offset, @Nullable Integer limit) {
    return list(messageId, source, group, type, reason, failedFrom, failedBefore, null, offset,
        limit);
  }

  /**
   * One page of dead letters, over every store or the one {@code store} names.
   *
   * @param messageId exact message id, or null
   * @param source exact source (outbox destination, topic or queue), or null
   * @param group exact consumer group, or null
   * @param type exact message type, or null
   * @param reason substring of the reason, or null
   * @param failedFrom ISO-8601 instant, inclusive lower bound of the last failure, or null
   * @param failedBefore ISO-8601 instant, exclusive upper bound of the last failure, or null
   * @param store the one store to list ({@code relaykit}, {@code kafka:<topic>}, {@code
   *     rabbitmq:<queue>}, as listed), or null for all
   * @param offset entries to skip, {@code >= 0}; default 0
   * @param limit page size, {@code 1..max-limit}; default 20
   * @return as the full listing
   */
  public WebEndpointResponse<Map<String, Object>> list(@Nullable String messageId,
      @Nullable String source, @Nullable String group, @Nullable String type,
      @Nullable String reason, @Nullable String failedFrom, @Nullable String failedBefore,
      @Nullable String store, @Nullable Integer offset, @Nullable Integer limit) {
    return list(messageId, source, group, type, reason, failedFrom, failedBefore, null, null,
        store, offset, limit);
  }

  /**
   * One page of dead letters, over every store or the one {@code store} names.
   *
   * @param messageId exact message id, or null
   * @param source exact source (outbox destination, topic or queue), or null
   * @param group exact consumer group, or null
   * @param type exact message type, or null
   * @param reason substring of the reason, or null
   * @param failedFrom ISO-8601 instant, inclusive lower bound of the last failure, or null
   * @param failedBefore ISO-8601 instant, exclusive upper bound of the last failure, or null
   * @param exceptionClass exact class name of the last failure's exception, or null
   * @param newestFirst true to order by last failure, then id, descending; default false
   * @param store the one store to list ({@code relaykit}, {@code kafka:<topic>}, {@code
   *     rabbitmq:<queue>}, as listed), or null for all
   * @param offset entries to skip, {@code >= 0}; default 0
   * @param limit page size, {@code 1..max-limit}; default 20
   * @return 200 with {@code total}, {@code offset}, {@code limit}, {@code deadLetters} and {@code
   *     stores}; 400 naming a bad parameter; 503 when every store listed fails
   */
  @ReadOperation
  public WebEndpointResponse<Map<String, Object>> list(@Nullable String messageId,
      @Nullable String source, @Nullable String group, @Nullable String type,
      @Nullable String reason, @Nullable String failedFrom, @Nullable String failedBefore,
      @Nullable String exceptionClass, @Nullable Boolean newestFirst, @Nullable String store,
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
          instant("failedBefore", failedBefore), skip, page)
          .withExceptionClass(blankToNull(exceptionClass))
          .withNewestFirst(Boolean.TRUE.equals(newestFirst));
    } catch (IllegalArgumentException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    }
    List<DeadLetterSource> selected;
    try {
      selected = select(blankToNull(store));
    } catch (IllegalArgumentException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    } catch (RuntimeException e) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE,
          "relaykit could not find its dead-letter stores: " + e.getMessage());
    }
    if (selected.size() > 1 && (long) skip + page > MAX_MERGED) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, "offset + limit must be at most "
          + MAX_MERGED + " over several stores, was " + ((long) skip + page)
          + "; name one with store=");
    }
    List<Listed> found = new ArrayList<>();
    List<Map<String, Object>> stores = new ArrayList<>();
    long total = 0;
    String firstError = null;
    for (DeadLetterSource s : selected) {
      Map<String, Object> info = new LinkedHashMap<>();
      info.put("store", s.name());
      info.put("purge", s.purgeRefusal() == null);
      if (s.retention() != null) {
        info.put("retention", s.retention());
      }
      try {
        DeadLetterStore st = s.store();
        List<DeadLetter> listed = selected.size() == 1 ? st.list(query) : head(st, query,
            skip + page);
        long count = st.count(query);
        listed.forEach(d -> found.add(new Listed(d, s.name())));
        total += count;
        info.put("total", count);
      } catch (RuntimeException e) {
        String message = e.getMessage();
        firstError = firstError == null ? message : firstError;
        info.put("error", message);
      }
      stores.add(info);
    }
    if (firstError != null && stores.stream().allMatch(i -> i.containsKey("error"))) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE,
          "relaykit could not list dead letters: " + firstError);
    }
    List<Listed> pageOf = found;
    if (selected.size() > 1) {
      Comparator<Listed> order = Comparator.comparing((Listed l) -> l.deadLetter.lastFailureAt())
          .thenComparing(l -> l.deadLetter.id()).thenComparing(l -> l.store);
      found.sort(query.newestFirst() ? order.reversed() : order);
      pageOf = found.subList(Math.min(skip, found.size()), Math.min(skip + page, found.size()));
    }
    List<Map<String, Object>> entries = new ArrayList<>(pageOf.size());
    for (Listed l : pageOf) {
      entries.add(json(l.deadLetter, l.store));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("total", total);
    body.put("offset", skip);
    body.put("limit", page);
    body.put("deadLetters", entries);
    body.put("stores", stores);
    if (firstError != null) {
      body.put("incomplete", true);
    }
    return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
  }

  /**
   * Replays one dead letter, from whichever store holds it; as {@link #replay(String, String)}
   * without a {@code store}.
   *
   * @param id the dead letter's id, as listed; not blank
   * @return as the full replay
   */
  public WebEndpointResponse<Map<String, Object>> replay(@Nullable String id) {
    return replay(id, null);
  }

  /**
   * Replays one dead letter through the store that holds it.
   *
   * @param id the dead letter's id, as listed; not blank
   * @param store the store that holds it, as listed; null to look in relaykit's store first, then
   *     in each broker store
   * @return 200 with {@code replayed} (the id), {@code messageId}, {@code destination} and {@code
   *     store}; 400 for a blank id or an unknown store; 404 when there is none; 503 when the store
   *     or the outbox fails (for relaykit's store the dead letter stays where it was, with {@code
   *     "resent": true} when the message was resent but the dead letter could not be removed: it
   *     stays, and a replay after the mark's lease resends it again; for a Kafka topic whose
   *     replay marker failed, it was resent and stays listed); 409 while another
   *     replay of it is under way; 422 when its message cannot go back into the outbox (or the
   *     broker store refuses it as bad input). A replay
   *     that resent the message but whose replay mark had lapsed meanwhile (its resend outlasted
   *     the lease, and another replay took the dead letter over) is 200 with {@code "markLapsed":
   *     true} and a {@code warning}: the mark lapsed, and another replay may also have sent it
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> replay(@Nullable String id,
      @Nullable String store) {
    List<DeadLetterSource> selected = new ArrayList<>();
    WebEndpointResponse<Map<String, Object>> refused = selectForWrite(id, store, selected);
    if (refused != null) {
      return refused;
    }
    String failed = null;
    for (DeadLetterSource s : selected) {
      Optional<DeadLetter> replayed;
      List<String> key = List.of(s.name(), id);
      boolean guarded = s != relaykit;
      if (guarded && !replaying.add(key)) {
        return error(409, "another replay of dead letter " + id + " through " + s.name()
            + " is under way in this application");
      }
      try {
        replayed = s.replay(id);
      } catch (io.relaykit.deadletter.ReplayMarkLapsedException e) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("replayed", id);
        body.put("messageId", e.deadLetter().messageId());
        body.put("destination", e.deadLetter().source());
        body.put("store", s.name());
        body.put("markLapsed", true);
        body.put("warning", e.getMessage());
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
      } catch (io.relaykit.deadletter.ReplayInProgressException e) {
        return error(409, e.getMessage());
      } catch (io.relaykit.deadletter.DeadLetterReplayer.ReplayException e) {
        if (!guarded) {
          WebEndpointResponse<Map<String, Object>> r = error(
              WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, e.resent() ? e.getMessage()
                  : "replay of dead letter " + id + " failed, it was left in place: "
                      + e.getMessage());
          if (e.resent()) {
            r.getBody().put("resent", true);
          }
          return r;
        }
        failed = failed == null ? "replay of dead letter " + id + " through " + s.name()
            + " failed: " + e.getMessage() : failed;
        continue;
      } catch (IllegalArgumentException e) {
        return error(422, "dead letter " + id + (guarded ? " cannot be replayed through "
            + s.name() : " cannot go back into the outbox") + ": " + e.getMessage());
      } catch (RuntimeException e) {
        if (!guarded) {
          return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, "replay of dead letter "
              + id + " failed, it was left in place: " + e.getMessage());
        }
        failed = failed == null ? "replay of dead letter " + id + " through " + s.name()
            + " failed: " + e.getMessage() : failed;
        continue;
      } finally {
        if (guarded) {
          replaying.remove(key);
        }
      }
      if (replayed.isPresent()) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("replayed", id);
        body.put("messageId", replayed.get().messageId());
        body.put("destination", replayed.get().source());
        body.put("store", s.name());
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
      }
    }
    if (failed != null) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, failed);
    }
    return error(WebEndpointResponse.STATUS_NOT_FOUND,
        "no dead letter " + id + " (already replayed or purged)");
  }

  /**
   * Removes one dead letter without replaying it, where its store can remove single entries.
   *
   * @param id the dead letter's id, as listed; not blank
   * @param store the store that holds it, as listed; null to look in every store
   * @return 200 with {@code purged} (the id), {@code messageId} and {@code store}; 400 for a blank
   *     id or an unknown store; 404 when there is none; 409 naming the reason when its store
   *     cannot remove it (a Kafka topic: retention is the broker's); 503 when a store fails
   */
  @DeleteOperation
  public WebEndpointResponse<Map<String, Object>> purge(@Nullable String id,
      @Nullable String store) {
    List<DeadLetterSource> selected = new ArrayList<>();
    WebEndpointResponse<Map<String, Object>> refused = selectForWrite(id, store, selected);
    if (refused != null) {
      return refused;
    }
    String failed = null;
    for (DeadLetterSource s : selected) {
      try {
        if (s.purgeRefusal() != null) {
          if (store != null || s.store().find(id).isPresent()) {
            return error(409,
                "dead letter " + id + " was not purged: " + s.purgeRefusal());
          }
          continue;
        }
        Optional<DeadLetter> removed = s.store().remove(id);
        if (removed.isPresent()) {
          Map<String, Object> body = new LinkedHashMap<>();
          body.put("purged", id);
          body.put("messageId", removed.get().messageId());
          body.put("store", s.name());
          return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
        }
      } catch (UnsupportedOperationException e) {
        return error(409, "dead letter " + id + " was not purged: " + s.name()
            + " cannot remove it: " + e.getMessage());
      } catch (RuntimeException e) {
        failed = failed == null ? "purge of dead letter " + id + " in " + s.name()
            + " failed, nothing was removed there: " + e.getMessage() : failed;
      }
    }
    if (failed != null) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, failed);
    }
    return error(WebEndpointResponse.STATUS_NOT_FOUND,
        "no dead letter " + id + " (already replayed or purged)");
  }

  /**
   * The stores a replay or purge of {@code id} looks in, added to {@code into}; or the answer that
   * refuses it: 400 for a blank id or an unknown store, 503 when the stores cannot be found.
   */
  private @Nullable WebEndpointResponse<Map<String, Object>> selectForWrite(@Nullable String id,
      @Nullable String store, List<DeadLetterSource> into) {
    if (id == null || id.isBlank()) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST,
          "id must be a dead letter's id, as listed; was " + (id == null ? "missing" : "blank"));
    }
    try {
      into.addAll(select(blankToNull(store)));
    } catch (IllegalArgumentException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    } catch (RuntimeException e) {
      return error(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE,
          "relaykit could not find its dead-letter stores: " + e.getMessage());
    }
    return null;
  }

  /** Every store, relaykit's first, or the one {@code store} names. */
  private List<DeadLetterSource> select(String store) {
    return sources.select(store);
  }

  /** The first {@code n} dead letters {@code query}'s filters select, read page by page. */
  private static List<DeadLetter> head(DeadLetterStore store, DeadLetterQuery query, int n) {
    List<DeadLetter> out = new ArrayList<>();
    while (out.size() < n) {
      int want = Math.min(DeadLetterQuery.MAX_LIMIT, n - out.size());
      List<DeadLetter> page = store.list(query.withPage(out.size(), want));
      out.addAll(page);
      if (page.size() < want) {
        break;
      }
    }
    return out;
  }

  /** A dead letter and the name of its store. */
  private record Listed(DeadLetter deadLetter, String store) {}

  private static Map<String, Object> json(DeadLetter d, String store) {
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
    n.put("store", store);
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

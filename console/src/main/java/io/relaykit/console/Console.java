package io.relaykit.console;

import static io.relaykit.console.Html.esc;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterCount;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.deadletter.ReplayMarkLapsedException;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.monitor.SubscriptionStatusSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The operator console, framework-neutral: {@link #handle} answers one request with one page.
 * Pages are plain HTML with inline SVG charts ({@link TimeChart}); no script, no external resource.
 *
 * <ul>
 *   <li>{@code GET /}: the overview: outbox backlog, oldest pending age and verdict over the
 *       history ({@link ConsoleHistory}, which says since when), dead letters per store,
 *       destination and group with their change over the history, and lag and in-flight per
 *       subscription.
 *   <li>{@code GET /dead-letters}: one store's dead letters, newest first, filtered by {@code
 *       source} (destination), {@code group}, {@code reason} (contains), {@code exception} (class
 *       name) and {@code from}/{@code before} (ISO-8601 instants, or {@code yyyy-MM-ddTHH:mm} in
 *       UTC), paged on the server by keyset ({@code after}, {@code afterId}), {@code size} per page
 *       (at most {@value #MAX_PAGE}).
 *   <li>{@code GET /dead-letter?store=&id=}: one dead letter: headers, reason, exception,
 *       attempts, first and last failure; the payload only when payload viewing is enabled
 *       (escaped, cut at its cap); the replay and purge forms when actions are on.
 *   <li>{@code GET /confirm?kind=replay-set|purge-set&store=&filters}: how many dead letters a set
 *       action would touch, and its confirmation form; refused beyond {@link
 *       Builder#maxSetSize(int)}.
 *   <li>{@code POST /action} with {@code action-id}: runs the action that id was issued for (see
 *       below), then redirects (303) to {@code GET /action?id=}, its outcome.
 * </ul>
 *
 * <p><b>Actions.</b> Off when the console is read-only ({@link Builder#readOnly}, refused with 403
 * and the configured hint). Each action's id is issued by the server when its form renders and
 * fixes what it does (the store, the dead letter or the filter); the id is recorded in a bounded
 * ledger as running before the action starts, so a repeated request with the same id (a double
 * click, a retried request) does nothing twice: it waits up to {@link #DUPLICATE_WAIT} for the first
 * to end and shows its outcome. An unknown id (never issued, evicted, or issued before a restart)
 * is refused with 409 and does nothing. Each action logs one line (who, what, how many) through
 * {@link System.Logger} and is counted through {@link MetricsListener#consoleAction}. A set replay
 * goes through the dead letters matching its filter newest first, one replay each through the
 * store's replay function, and stops at the first failure, saying how many it replayed; those not
 * reached stay in the store. Check CSRF in the host: the console embeds the request's token in
 * every form.
 *
 * <p><b>Bad input</b> (a blank id, an oversize or malformed parameter, an unknown store, too many
 * parameters) is 400 naming the parameter. A store that fails is shown as an error on the page
 * (503 when the page has nothing else to show). Thread-safe; each request reads at most one page
 * of dead letters (a set action reads its set page by page), one count per store and each
 * subscription source once.
 */
public final class Console implements AutoCloseable {

  /** The largest page of dead letters. */
  public static final int MAX_PAGE = 200;
  /** The page size when none is asked for. */
  public static final int DEFAULT_PAGE = 50;
  /** The longest parameter value accepted, in characters. */
  public static final int MAX_PARAMETER = 1000;
  /** Most parameters (values counted) a request may carry. */
  public static final int MAX_PARAMETERS = 64;
  /** How long a repeated action request waits for the first to end. */
  public static final Duration DUPLICATE_WAIT = Duration.ofSeconds(30);

  private static final System.Logger LOG = System.getLogger(Console.class.getName());
  private static final int REASON_IN_LIST = 200;
  private static final int TEXT_IN_DETAIL = 10_000;
  private static final Set<String> PARAMETERS = Set.of("store", "id", "source", "group", "reason",
      "exception", "from", "before", "after", "afterId", "size", "kind", "action-id");

  private final ConsoleHistory history;
  private final Map<String, ConsoleDeadLetterSource> sources;
  private final List<SubscriptionStatusSource> subscriptions;
  private final boolean readOnly;
  private final String readOnlyHint;
  private final int payloadCap;
  private final int maxSetSize;
  private final Duration samplePeriod;
  private final InstantSource clock;
  private final MetricsListener metrics;
  private final ActionLedger ledger;
  private final ConsoleActions actions;
  private ScheduledExecutorService sampler;
  private boolean closed;

  private Console(Builder b) {
    this.clock = b.clock;
    this.sources = new LinkedHashMap<>(b.sources);
    this.subscriptions = List.copyOf(b.subscriptions);
    this.readOnly = b.readOnly;
    this.readOnlyHint = b.readOnlyHint;
    this.payloadCap = b.payloadCap;
    this.maxSetSize = b.maxSetSize;
    this.samplePeriod = b.samplePeriod;
    this.metrics = b.metrics;
    this.ledger = new ActionLedger(b.ledgerCapacity);
    ConsoleHistory.Builder h = ConsoleHistory.builder().clock(clock)
        .capacity(b.historyCapacity);
    if (b.backlog != null) {
      h.backlog(b.backlog, new BacklogMonitor(b.monitorConfig, clock));
    }
    sources.forEach((name, s) -> h.deadLetters(name, s.store()));
    subscriptions.forEach(h::subscriptions);
    this.history = h.build();
    this.actions = new ConsoleActions(ledger, metrics, maxSetSize);
  }

  /**
   * A builder: read-only, payloads hidden, no sources yet.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts sampling the history every {@link Builder#samplePeriod} on one daemon thread, taking
   * the first sample now. Idempotent.
   *
   * @return this console
   * @throws IllegalStateException if it was closed
   */
  public synchronized Console start() {
    if (closed) {
      throw new IllegalStateException("the console was closed");
    }
    if (sampler == null) {
      sampler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "relaykit-console-history");
        t.setDaemon(true);
        return t;
      });
      long ms = samplePeriod.toMillis();
      sampler.scheduleWithFixedDelay(history::tick, 0, ms, TimeUnit.MILLISECONDS);
    }
    return this;
  }

  /** {@return the history the overview draws} */
  public ConsoleHistory history() {
    return history;
  }

  /** {@return whether actions are refused} */
  public boolean readOnly() {
    return readOnly;
  }

  /**
   * Stops the sampling thread, waiting up to a second for a sample under way; requests are still
   * answered (from the history so far). Idempotent.
   */
  @Override
  public void close() {
    ScheduledExecutorService s;
    synchronized (this) {
      closed = true;
      s = sampler;
      sampler = null;
    }
    if (s != null) {
      s.shutdownNow();
      try {
        s.awaitTermination(1, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Answers one request. Never throws for what the request holds or what a store does: bad input
   * is 400, a failing store is shown on the page or answered 503.
   *
   * @param request the request
   * @return the page, redirect or error
   * @throws NullPointerException if {@code request} is null
   */
  public ConsoleResponse handle(ConsoleRequest request) {
    Objects.requireNonNull(request, "request");
    try {
      checkParameters(request);
      String method = request.method();
      String path = request.path();
      boolean read = method.equals("GET") || method.equals("HEAD");
      if (path.equals("/action") && method.equals("POST")) {
        return act(request);
      }
      if (!read) {
        return error(request, 405, "method " + method + " is not allowed on " + path);
      }
      return switch (path) {
        case "/", "/overview" -> overview(request);
        case "/dead-letters" -> deadLetters(request);
        case "/dead-letter" -> detail(request);
        case "/confirm" -> confirm(request);
        case "/action" -> outcome(request);
        default -> error(request, 404, "no console page at " + path);
      };
    } catch (BadRequest e) {
      return error(request, 400, e.getMessage());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "console request " + request.method() + " "
          + request.path() + " failed", e);
      return error(request, 503, "relaykit could not answer: " + e);
    }
  }

  // ---------------------------------------------------------------- input

  /** A request parameter that cannot be used; answered 400 with the message. */
  static final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadRequest(String message) {
      super(message, null, false, false);
    }
  }

  private static void checkParameters(ConsoleRequest r) {
    int values = 0;
    for (Map.Entry<String, List<String>> p : r.parameters().entrySet()) {
      String name = p.getKey();
      values += p.getValue().size();
      if (values > MAX_PARAMETERS) {
        throw new BadRequest("too many parameters: at most " + MAX_PARAMETERS);
      }
      if (name.equals(r.csrfParameter()) || !PARAMETERS.contains(name)) {
        continue; // The host's own parameters (its CSRF field, a token) pass through unread.
      }
      if (p.getValue().size() > 1) {
        throw new BadRequest("parameter " + name + " is given " + p.getValue().size()
            + " times; give it once");
      }
      for (String v : p.getValue()) {
        if (v.length() > MAX_PARAMETER) {
          throw new BadRequest("parameter " + name + " is " + v.length()
              + " characters long; at most " + MAX_PARAMETER);
        }
        for (int i = 0; i < v.length(); i++) {
          if (Character.isISOControl(v.charAt(i))) {
            throw new BadRequest("parameter " + name + " holds a control character at "
                + i);
          }
        }
      }
    }
  }

  /** The value of {@code name}, trimmed; null when absent or empty (an empty form field). */
  private static String optional(ConsoleRequest r, String name) {
    String v = r.parameter(name);
    if (v == null) {
      return null;
    }
    String t = v.strip();
    return t.isEmpty() ? null : t;
  }

  private static String required(ConsoleRequest r, String name) {
    String v = r.parameter(name);
    if (v == null) {
      throw new BadRequest("parameter " + name + " is missing");
    }
    if (v.isBlank()) {
      throw new BadRequest("parameter " + name + " is blank");
    }
    return v.strip();
  }

  private ConsoleDeadLetterSource source(ConsoleRequest r, boolean required) {
    String name = required ? required(r, "store") : optional(r, "store");
    if (name == null) {
      if (sources.isEmpty()) {
        throw new BadRequest("this console has no dead-letter store");
      }
      return sources.values().iterator().next();
    }
    ConsoleDeadLetterSource s = sources.get(name);
    if (s == null) {
      throw new BadRequest("parameter store: no store " + name + "; the stores are "
          + sources.keySet());
    }
    return s;
  }

  static Instant instant(String name, String value) {
    if (value == null) {
      return null;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      try {
        return LocalDateTime.parse(value).toInstant(ZoneOffset.UTC);
      } catch (DateTimeParseException e2) {
        throw new BadRequest("parameter " + name + " is not an ISO-8601 instant"
            + " (2026-12-07T03:00:00Z) or a UTC date-time (2026-12-07T03:00), was " + value);
      }
    }
  }

  private static ConsoleAction.Filter filter(ConsoleRequest r) {
    ConsoleAction.Filter f = new ConsoleAction.Filter(optional(r, "source"), optional(r, "group"),
        optional(r, "reason"), optional(r, "exception"), instant("from", optional(r, "from")),
        instant("before", optional(r, "before")));
    if (f.from() != null && f.before() != null && !f.before().isAfter(f.from())) {
      throw new BadRequest("parameter before (" + f.before() + ") must be after from ("
          + f.from() + ")");
    }
    return f;
  }

  private static int pageSize(ConsoleRequest r) {
    String v = optional(r, "size");
    if (v == null) {
      return DEFAULT_PAGE;
    }
    try {
      int n = Integer.parseInt(v);
      if (n >= 1 && n <= MAX_PAGE) {
        return n;
      }
    } catch (NumberFormatException e) {
      // answered below
    }
    throw new BadRequest("parameter size must be a whole number in 1.." + MAX_PAGE + ", was "
        + v);
  }

  private static Map<String, String> filterParams(String store, ConsoleAction.Filter f) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("store", store);
    m.put("source", f.source());
    m.put("group", f.group());
    m.put("reason", f.reason());
    m.put("exception", f.exceptionClass());
    m.put("from", f.from() == null ? null : f.from().toString());
    m.put("before", f.before() == null ? null : f.before().toString());
    return m;
  }

  // ---------------------------------------------------------------- pages

  private ConsoleResponse page(ConsoleRequest r, int status, String title, String body) {
    return ConsoleResponse.html(status, Html.page(r.root(), title, r.principal(), readOnly,
        body));
  }

  private ConsoleResponse error(ConsoleRequest r, int status, String message) {
    String title = switch (status) {
      case 400 -> "Bad request";
      case 403 -> "Refused";
      case 404 -> "Not found";
      case 405 -> "Method not allowed";
      case 409 -> "Conflict";
      default -> "Unavailable";
    };
    return page(r, status, title, "<p class=\"error\" id=\"error\">" + esc(message) + "</p>");
  }

  private ConsoleResponse overview(ConsoleRequest r) {
    StringBuilder b = new StringBuilder();
    List<ConsoleHistory.Sample> samples = history.samples();
    ConsoleHistory.Sample latest = samples.isEmpty() ? null : samples.get(samples.size() - 1);
    b.append("<p id=\"since\">History since <time>").append(esc(Html.time(history.since())))
        .append("</time> (kept in memory from the start of this process; ")
        .append(samples.size()).append(" samples, ").append(history.failedReads())
        .append(" failed reads)</p>");
    if (latest != null && latest.verdict() != null) {
      b.append("<p>Outbox backlog <strong id=\"backlog\">").append(latest.backlog())
          .append("</strong> unsent, oldest pending <strong id=\"oldest\">")
          .append(Duration.ofMillis(latest.oldestPendingMs()).toSeconds())
          .append(" s</strong>, verdict <span class=\"verdict\" id=\"verdict\">")
          .append(esc(latest.verdict().name())).append("</span></p>");
    }
    b.append("<figure id=\"chart\">").append(history.svg("history-svg")).append("</figure>");

    b.append("<h2>Dead letters</h2><table id=\"dead-letter-groups\"><tr><th>store</th>"
        + "<th>destination</th><th>group</th><th>held</th><th>change since the oldest sample"
        + "</th><th>newest failure</th></tr>");
    ConsoleHistory.Sample first = samples.isEmpty() ? null : samples.get(0);
    for (ConsoleDeadLetterSource s : sources.values()) {
      List<DeadLetterCount> counts;
      try {
        counts = s.store().countBySource(ConsoleHistory.MAX_GROUPS);
      } catch (RuntimeException e) {
        b.append("<tr><td>").append(esc(s.name())).append("</td><td colspan=\"5\" class=\"error"
            + "\">could not read: ").append(esc(String.valueOf(e.getMessage()))).append("</td></tr>");
        continue;
      }
      if (counts.isEmpty()) {
        b.append("<tr><td>").append(esc(s.name())).append("</td><td colspan=\"5\">none")
            .append(note(s)).append("</td></tr>");
      }
      for (DeadLetterCount c : counts) {
        String link = r.root() + "/dead-letters" + Html.query(filterParams(s.name(),
            new ConsoleAction.Filter(c.source(), c.group(), null, null, null, null)));
        Long then = first == null ? null : first.deadLettersByGroup().get(
            new ConsoleHistory.GroupKey(s.name(), c.source(), c.group()));
        String trend = first == null || first.failedParts().contains("dead letters of "
            + s.name()) ? "unknown" : signed(c.count() - (then == null ? 0 : then));
        b.append("<tr><td>").append(esc(s.name())).append(note(s)).append("</td><td><a href=\"")
            .append(esc(link)).append("\">").append(esc(c.source())).append("</a></td><td>")
            .append(esc(c.group() == null ? "" : c.group())).append("</td><td class=\"num\">")
            .append(c.count()).append("</td><td class=\"num\">").append(trend)
            .append("</td><td>").append(esc(Html.time(c.newestFailureAt()))).append("</td></tr>");
      }
    }
    b.append("</table>");

    b.append("<h2>Subscriptions</h2>");
    if (subscriptions.isEmpty()) {
      b.append("<p class=\"note\">No subscription sources are configured.</p>");
    } else {
      b.append("<table id=\"subscriptions\"><tr><th>kind</th><th>destination</th><th>group</th>"
          + "<th>lag</th><th>in flight</th><th>read at</th></tr>");
      int shown = 0;
      for (SubscriptionStatusSource source : subscriptions) {
        try {
          for (SubscriptionStatus st : source.read()) {
            if (shown++ >= ConsoleHistory.MAX_SUBSCRIPTIONS) {
              break;
            }
            b.append("<tr><td>").append(esc(st.kind())).append("</td><td>")
                .append(esc(st.destination())).append("</td><td>")
                .append(esc(st.group() == null ? "" : st.group())).append("</td><td class=\"num\">")
                .append(figure(st.lag())).append("</td><td class=\"num\">")
                .append(figure(st.inFlight())).append("</td><td>")
                .append(esc(Html.time(st.readAt()))).append("</td></tr>");
          }
        } catch (Exception e) {
          if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
          }
          b.append("<tr><td colspan=\"6\" class=\"error\">could not read: ")
              .append(esc(String.valueOf(e.getMessage()))).append("</td></tr>");
        }
      }
      b.append("</table>");
    }
    return page(r, 200, "Overview", b.toString());
  }

  private static String signed(long d) {
    return d > 0 ? "+" + d : Long.toString(d);
  }

  private static String figure(long v) {
    return v == SubscriptionStatus.UNKNOWN ? "unknown" : Long.toString(v);
  }

  private static String note(ConsoleDeadLetterSource s) {
    return s.note() == null ? "" : " <span class=\"note\">(" + esc(s.note()) + ")</span>";
  }

  private ConsoleResponse deadLetters(ConsoleRequest r) {
    ConsoleDeadLetterSource s = source(r, false);
    ConsoleAction.Filter f = filter(r);
    int size = pageSize(r);
    String afterAt = optional(r, "after");
    String afterId = optional(r, "afterId");
    if ((afterAt == null) != (afterId == null)) {
      throw new BadRequest("parameters after and afterId must be given together");
    }
    DeadLetterQuery q = f.query(size);
    if (afterAt != null) {
      q = q.withAfter(new DeadLetterQuery.Position(instant("after", afterAt), afterId));
    }
    StringBuilder b = new StringBuilder();
    b.append("<p>Stores: ");
    for (ConsoleDeadLetterSource o : sources.values()) {
      b.append(o == s ? "<strong>" + esc(o.name()) + "</strong>" : "<a href=\"" + esc(r.root()
          + "/dead-letters" + Html.query(Map.of("store", o.name()))) + "\">" + esc(o.name())
          + "</a>").append(' ');
    }
    b.append("</p>");
    if (s.note() != null) {
      b.append("<p class=\"note\" id=\"store-note\">").append(esc(s.name())).append(": ")
          .append(esc(s.note())).append("</p>");
    }
    b.append("<form method=\"get\" class=\"filters\" id=\"filters\" action=\"")
        .append(esc(r.root() + "/dead-letters")).append("\"><input type=\"hidden\" name=\"store"
            + "\" value=\"").append(esc(s.name())).append("\">")
        .append(field("source", "destination", f.source()))
        .append(field("group", "group", f.group()))
        .append(field("reason", "reason contains", f.reason()))
        .append(field("exception", "exception class", f.exceptionClass()))
        .append(field("from", "from (UTC)", f.from() == null ? null : f.from().toString()))
        .append(field("before", "before (UTC)", f.before() == null ? null
            : f.before().toString()))
        .append(" <button type=\"submit\">Filter</button></form>");
    List<DeadLetter> list;
    long total;
    try {
      list = s.store().list(q);
      total = s.store().count(f.query(1));
    } catch (RuntimeException e) {
      b.append("<p class=\"error\">could not read store ").append(esc(s.name())).append(": ")
          .append(esc(String.valueOf(e.getMessage()))).append("</p>");
      return page(r, 503, "Dead letters", b.toString());
    }
    b.append("<p><span id=\"total\">").append(total).append("</span> match")
        .append(total == 1 ? "es" : "").append(", newest first.");
    if (total > 0) {
      Map<String, String> set = filterParams(s.name(), f);
      set.put("kind", ConsoleAction.Kind.REPLAY_SET.label);
      b.append(" <a id=\"replay-set\" href=\"").append(esc(r.root() + "/confirm"
          + Html.query(set))).append("\">Replay these ").append(total).append("…</a>");
      if (s.purgeSupported()) {
        set.put("kind", ConsoleAction.Kind.PURGE_SET.label);
        b.append(" · <a id=\"purge-set\" href=\"").append(esc(r.root() + "/confirm"
            + Html.query(set))).append("\">Purge these ").append(total).append("…</a>");
      }
    }
    b.append("</p><table id=\"dead-letters\"><tr><th>last failure</th><th>destination</th>"
        + "<th>group</th><th>reason</th><th>exception</th><th>attempts</th><th>message id</th>"
        + "</tr>");
    for (DeadLetter d : list) {
      String link = r.root() + "/dead-letter" + Html.query(mapOf("store", s.name(), "id",
          d.id()));
      b.append("<tr class=\"dead-letter\"><td>").append(esc(Html.time(d.lastFailureAt())))
          .append("</td><td>").append(esc(d.source())).append("</td><td>")
          .append(esc(d.group() == null ? "" : d.group())).append("</td><td class=\"reason\">")
          .append(esc(Html.cut(d.reason(), REASON_IN_LIST))).append("</td><td>")
          .append(esc(d.exceptionClass() == null ? "" : d.exceptionClass()))
          .append("</td><td class=\"num\">").append(d.attempts()).append("</td><td><a href=\"")
          .append(esc(link)).append("\">").append(esc(d.messageId())).append("</a></td></tr>");
    }
    b.append("</table>");
    if (list.size() == size) {
      DeadLetter last = list.get(list.size() - 1);
      Map<String, String> next = filterParams(s.name(), f);
      next.put("size", Integer.toString(size));
      next.put("after", last.lastFailureAt().toString());
      next.put("afterId", last.id());
      b.append("<p><a id=\"older\" href=\"").append(esc(r.root() + "/dead-letters"
          + Html.query(next))).append("\">Older →</a></p>");
    }
    return page(r, 200, "Dead letters", b.toString());
  }

  private static Map<String, String> mapOf(String k1, String v1, String k2, String v2) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(k1, v1);
    m.put(k2, v2);
    return m;
  }

  private static String field(String name, String label, String value) {
    return "<label>" + esc(label) + " <input name=\"" + name + "\" value=\"" + esc(value)
        + "\"></label> ";
  }

  private ConsoleResponse detail(ConsoleRequest r) {
    ConsoleDeadLetterSource s = source(r, true);
    String id = required(r, "id");
    Optional<DeadLetter> found;
    try {
      found = s.store().find(id);
    } catch (RuntimeException e) {
      return error(r, 503, "could not read store " + s.name() + ": " + e.getMessage());
    }
    if (found.isEmpty()) {
      return error(r, 404, "no dead letter " + id + " in store " + s.name()
          + " (replayed or purged)");
    }
    DeadLetter d = found.get();
    StringBuilder b = new StringBuilder("<table id=\"detail\">");
    row(b, "store", s.name() + (s.note() == null ? "" : " (" + s.note() + ")"));
    row(b, "id", d.id());
    row(b, "message id", d.messageId());
    row(b, "type", d.message().type());
    row(b, "key", d.message().key().orElse(""));
    row(b, "destination", d.source());
    row(b, "group", d.group() == null ? "" : d.group());
    row(b, "reason", Html.cut(d.reason(), TEXT_IN_DETAIL));
    row(b, "exception", d.exceptionClass() == null ? "" : d.exceptionClass());
    row(b, "exception message", Html.cut(d.exceptionMessage(), TEXT_IN_DETAIL));
    row(b, "attempts", Integer.toString(d.attempts()));
    row(b, "first failure", Html.time(d.firstFailureAt()));
    row(b, "last failure", Html.time(d.lastFailureAt()));
    row(b, "created", Html.time(d.message().createdAt()));
    row(b, "trace id", d.message().traceId());
    b.append("</table><h2>Headers</h2><table id=\"headers\"><tr><th>name</th><th>value</th>"
        + "</tr>");
    d.message().headers().forEach((k, v) -> b.append("<tr><td>").append(esc(k))
        .append("</td><td>").append(esc(Html.cut(v, TEXT_IN_DETAIL))).append("</td></tr>"));
    b.append("</table><h2>Payload</h2>");
    int n = d.message().payloadSize();
    if (payloadCap == 0) {
      b.append("<p class=\"note\" id=\"payload-hidden\">").append(n).append(" bytes, hidden:"
          + " payload viewing is off in this console's configuration.</p>");
    } else {
      byte[] p = d.message().payload();
      int shown = Math.min(p.length, payloadCap);
      String text = new String(p, 0, shown, StandardCharsets.UTF_8);
      b.append("<pre id=\"payload\">").append(esc(text)).append("</pre>");
      if (shown < p.length) {
        b.append("<p class=\"note\">").append(p.length - shown).append(" more bytes not shown"
            + " (cap ").append(payloadCap).append(" bytes)</p>");
      }
    }
    b.append("<h2>Actions</h2>");
    if (readOnly) {
      b.append("<p class=\"note\" id=\"actions-off\">Actions are off: this console is read-only")
          .append(readOnlyHint == null ? "" : " (" + esc(readOnlyHint) + ")").append(".</p>");
    } else {
      b.append(actionForm(r, new ConsoleAction(ConsoleAction.Kind.REPLAY_ONE, s.name(), d.id(),
          null, 1, null), "Replay", "replay"));
      if (s.purgeSupported()) {
        b.append(actionForm(r, new ConsoleAction(ConsoleAction.Kind.PURGE_ONE, s.name(), d.id(),
            null, 1, null), "Purge", "purge"));
      } else {
        b.append("<p class=\"note\">This store cannot remove a single dead letter")
            .append(s.note() == null ? "" : ": " + esc(s.note())).append(".</p>");
      }
    }
    return page(r, 200, "Dead letter", b.toString());
  }

  private static void row(StringBuilder b, String name, String value) {
    b.append("<tr><th>").append(esc(name)).append("</th><td>").append(esc(value))
        .append("</td></tr>");
  }

  /** A form for {@code action}, its id issued now. */
  private String actionForm(ConsoleRequest r, ConsoleAction action, String label, String id) {
    ActionLedger.Entry e = ledger.issue(action, r.principal(), clock.instant());
    StringBuilder b = new StringBuilder("<form method=\"post\" class=\"inline\" id=\"")
        .append(esc(id)).append("-form\" action=\"").append(esc(r.root() + "/action"))
        .append("\"><input type=\"hidden\" name=\"action-id\" value=\"").append(esc(e.id))
        .append("\">");
    if (r.csrfParameter() != null) {
      b.append("<input type=\"hidden\" name=\"").append(esc(r.csrfParameter()))
          .append("\" value=\"").append(esc(r.csrfToken())).append("\">");
    }
    return b.append("<button type=\"submit\" id=\"").append(esc(id)).append("\">")
        .append(esc(label)).append("</button></form> ").toString();
  }

  private ConsoleResponse confirm(ConsoleRequest r) {
    if (readOnly) {
      return refusedReadOnly(r);
    }
    String kindName = required(r, "kind");
    ConsoleAction.Kind kind;
    if (kindName.equals(ConsoleAction.Kind.REPLAY_SET.label)) {
      kind = ConsoleAction.Kind.REPLAY_SET;
    } else if (kindName.equals(ConsoleAction.Kind.PURGE_SET.label)) {
      kind = ConsoleAction.Kind.PURGE_SET;
    } else {
      throw new BadRequest("parameter kind must be replay-set or purge-set, was " + kindName);
    }
    ConsoleDeadLetterSource s = source(r, true);
    if (kind == ConsoleAction.Kind.PURGE_SET && !s.purgeSupported()) {
      return error(r, 409, "store " + s.name() + " cannot remove dead letters"
          + (s.note() == null ? "" : ": " + s.note()));
    }
    ConsoleAction.Filter f = filter(r);
    long count;
    DeadLetterQuery.Position head;
    try {
      count = s.store().count(f.query(1));
      List<DeadLetter> newest = count == 0 ? List.of() : s.store().list(f.query(1));
      head = newest.isEmpty() ? null : DeadLetterQuery.Position.of(newest.get(0));
    } catch (RuntimeException e) {
      return error(r, 503, "could not count the dead letters of store " + s.name() + ": "
          + e.getMessage());
    }
    String what = kind.verb + " the dead letters of store " + s.name() + " matching "
        + f.describe();
    StringBuilder b = new StringBuilder("<p id=\"what\">").append(esc(what)).append("</p>");
    if (count == 0) {
      b.append("<p id=\"count\">Nothing matches.</p>");
      return page(r, 200, "Confirm", b.toString());
    }
    if (count > maxSetSize) {
      return error(r, 422, count + " dead letters match; a set action handles at most "
          + maxSetSize + ": narrow the filter (destination, group, reason, time)");
    }
    b.append("<p><strong id=\"count\">").append(count).append("</strong> dead letters match.")
        .append(kind == ConsoleAction.Kind.REPLAY_SET ? " Each is replayed once, newest first;"
            + " a failure stops the set there." : " Each is removed; this cannot be undone.")
        .append("</p>");
    b.append(actionForm(r, new ConsoleAction(kind, s.name(), null, f, count, head),
        (kind == ConsoleAction.Kind.REPLAY_SET ? "Replay " : "Purge ") + count
            + " dead letters", "confirm"));
    return page(r, 200, "Confirm", b.toString());
  }

  private ConsoleResponse refusedReadOnly(ConsoleRequest r) {
    return error(r, 403, "actions are off: this console is read-only"
        + (readOnlyHint == null ? "" : " (" + readOnlyHint + ")"));
  }

  // ---------------------------------------------------------------- actions

  private ConsoleResponse act(ConsoleRequest r) {
    if (readOnly) {
      return refusedReadOnly(r);
    }
    String id = required(r, "action-id");
    ActionLedger.Entry e = ledger.find(id);
    if (e == null) {
      return error(r, 409, "unknown action id " + id + ": it was never issued, or it is too old"
          + " (or the console restarted); reload the page and try again. Nothing was done.");
    }
    ConsoleDeadLetterSource s = sources.get(e.action.store());
    try {
      actions.run(e, s, r.principal(), DUPLICATE_WAIT);
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      return error(r, 503, "interrupted while waiting for action " + id + "; see its outcome at "
          + r.root() + "/action?id=" + id);
    }
    return ConsoleResponse.redirect(r.root() + "/action?id=" + Html.url(id));
  }

  private ConsoleResponse outcome(ConsoleRequest r) {
    String id = required(r, "id");
    ActionLedger.Entry e = ledger.find(id);
    if (e == null) {
      return error(r, 404, "no action " + id + " (never issued, or too old)");
    }
    StringBuilder b = new StringBuilder("<p id=\"what\">").append(esc(e.action.describe()))
        .append("</p>");
    ActionLedger.Outcome o;
    synchronized (ledger) {
      o = e.outcome;
    }
    if (o == null) {
      b.append("<p id=\"outcome\">Not done yet: still running, or not confirmed.</p>");
    } else {
      b.append("<p id=\"outcome\" class=\"").append(o.ok() ? "ok" : "error").append("\">")
          .append(esc(o.summary())).append("</p>");
    }
    b.append("<p><a href=\"").append(esc(r.root() + "/dead-letters" + Html.query(
        Map.of("store", e.action.store())))).append("\">Back to the dead letters</a></p>");
    return page(r, 200, "Action", b.toString());
  }

  /** Configures a {@link Console}. */
  public static final class Builder {
    private ConsoleHistory.BacklogReader backlog;
    private BacklogMonitor.Config monitorConfig = BacklogMonitor.Config.defaults();
    private final Map<String, ConsoleDeadLetterSource> sources = new LinkedHashMap<>();
    private final List<SubscriptionStatusSource> subscriptions = new ArrayList<>();
    private boolean readOnly = true;
    private String readOnlyHint;
    private int payloadCap;
    private int maxSetSize = 1000;
    private int ledgerCapacity = 10_000;
    private int historyCapacity = ConsoleHistory.DEFAULT_CAPACITY;
    private Duration samplePeriod = ConsoleHistory.DEFAULT_PERIOD;
    private InstantSource clock = InstantSource.system();
    private MetricsListener metrics = MetricsListener.noop();

    private Builder() {}

    /**
     * The outbox backlog, sampled for the overview's chart; without it the overview has no
     * backlog.
     *
     * @param reader reads it (e.g. {@code now -> outboxStore.stats(now)})
     * @return this builder
     * @throws NullPointerException if {@code reader} is null
     */
    public Builder backlog(ConsoleHistory.BacklogReader reader) {
      this.backlog = Objects.requireNonNull(reader, "reader");
      return this;
    }

    /**
     * How the backlog is judged; default {@link BacklogMonitor.Config#defaults()}.
     *
     * @param config the monitor's settings
     * @return this builder
     * @throws NullPointerException if {@code config} is null
     */
    public Builder backlogMonitor(BacklogMonitor.Config config) {
      this.monitorConfig = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * A dead-letter store to show.
     *
     * @param source the store, its name, replay and purge
     * @return this builder
     * @throws NullPointerException if {@code source} is null
     * @throws IllegalArgumentException if a store of that name was already added
     */
    public Builder deadLetters(ConsoleDeadLetterSource source) {
      Objects.requireNonNull(source, "source");
      if (sources.putIfAbsent(source.name(), source) != null) {
        throw new IllegalArgumentException("dead-letter store " + source.name()
            + " was already added");
      }
      return this;
    }

    /**
     * A source of subscription lag and in-flight figures.
     *
     * @param source the source
     * @return this builder
     * @throws NullPointerException if {@code source} is null
     */
    public Builder subscriptions(SubscriptionStatusSource source) {
      subscriptions.add(Objects.requireNonNull(source, "source"));
      return this;
    }

    /**
     * Whether actions are refused; default true.
     *
     * @param readOnly true to refuse every action (403)
     * @return this builder
     */
    public Builder readOnly(boolean readOnly) {
      this.readOnly = readOnly;
      return this;
    }

    /**
     * What a refusal of a read-only console tells the operator, e.g. "start it with
     * --allow-actions"; default none.
     *
     * @param hint the hint, or null
     * @return this builder
     */
    public Builder readOnlyHint(String hint) {
      this.readOnlyHint = hint;
      return this;
    }

    /**
     * Shows payloads in the detail view, escaped, at most {@code maxBytes} of each; default off
     * (0).
     *
     * @param maxBytes 0 (hidden) to 1 000 000
     * @return this builder
     * @throws IllegalArgumentException if {@code maxBytes} is out of range
     */
    public Builder payloadView(int maxBytes) {
      if (maxBytes < 0 || maxBytes > 1_000_000) {
        throw new IllegalArgumentException("payloadView must be in 0..1000000 bytes, was "
            + maxBytes);
      }
      this.payloadCap = maxBytes;
      return this;
    }

    /**
     * The most dead letters a set action may touch; more are refused at confirmation and at run;
     * default 1 000.
     *
     * @param max 1 to 100 000
     * @return this builder
     * @throws IllegalArgumentException if {@code max} is out of range
     */
    public Builder maxSetSize(int max) {
      if (max < 1 || max > 100_000) {
        throw new IllegalArgumentException("maxSetSize must be in 1..100000, was " + max);
      }
      this.maxSetSize = max;
      return this;
    }

    /**
     * The most action ids kept; default 10 000.
     *
     * @param capacity 1 to 1 000 000
     * @return this builder
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public Builder ledgerCapacity(int capacity) {
      if (capacity < 1 || capacity > 1_000_000) {
        throw new IllegalArgumentException("ledgerCapacity must be in 1..1000000, was "
            + capacity);
      }
      this.ledgerCapacity = capacity;
      return this;
    }

    /**
     * The history's ring and sampling period; default {@value ConsoleHistory#DEFAULT_CAPACITY}
     * samples every {@link ConsoleHistory#DEFAULT_PERIOD}: an hour.
     *
     * @param capacity samples kept, 2 to 100 000
     * @param period time between samples, 100 ms to 10 minutes
     * @return this builder
     * @throws IllegalArgumentException if a value is out of range
     * @throws NullPointerException if {@code period} is null
     */
    public Builder history(int capacity, Duration period) {
      Objects.requireNonNull(period, "period");
      if (capacity < 2 || capacity > 100_000) {
        throw new IllegalArgumentException("history capacity must be in 2..100000, was "
            + capacity);
      }
      if (period.compareTo(Duration.ofMillis(100)) < 0
          || period.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("history period must be in 100ms..10min, was "
            + period);
      }
      this.historyCapacity = capacity;
      this.samplePeriod = period;
      return this;
    }

    /**
     * The clock of the history, the ledger and action times; default the system's.
     *
     * @param clock the clock
     * @return this builder
     * @throws NullPointerException if {@code clock} is null
     */
    public Builder clock(InstantSource clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Where actions are counted ({@link MetricsListener#consoleAction}); default none.
     *
     * @param metrics the listener
     * @return this builder
     * @throws NullPointerException if {@code metrics} is null
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Builds the console; call {@link Console#start()} to sample its history.
     *
     * @return the console
     */
    public Console build() {
      return new Console(this);
    }
  }
}

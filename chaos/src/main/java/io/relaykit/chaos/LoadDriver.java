package io.relaykit.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.StatusSeen;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The client side of a chaos run: places orders over the demo's HTTP API at a paced rate, each
 * with its own Idempotency-Key, resends a request that got no answer (or a retryable one: 409
 * while a cut-short request's claim lives, 5xx) with the same key until it is accepted, resends
 * a share of accepted requests on purpose, and reads order statuses. Every request and answer is
 * recorded for the {@link Checker}.
 *
 * <p>Bounded: {@link #SENDERS} sender threads, each order gives up after {@link #GIVE_UP} without
 * a 202 (it then counts as not accepted, not as lost), 10 s per request.
 */
final class LoadDriver {
  static final int SENDERS = 32;
  static final Duration GIVE_UP = Duration.ofSeconds(120);
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final ChaosOptions options;
  private final String runId;
  private final List<DemoInstance> instances;
  private final long t0;
  private final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2))
      .build();

  final List<Request> requests = Collections.synchronizedList(new ArrayList<>());
  final List<StatusSeen> statuses = Collections.synchronizedList(new ArrayList<>());
  /** Order ids the client got a 202 for, in acceptance order. */
  final List<String> acceptedIds = Collections.synchronizedList(new ArrayList<>());
  private final Set<String> acceptedSet = ConcurrentHashMap.newKeySet();
  /** Orders the client saw SUCCESS or FAILED. */
  final Set<String> terminal = ConcurrentHashMap.newKeySet();
  private final AtomicInteger next = new AtomicInteger();
  private final AtomicInteger roundRobin = new AtomicInteger();

  LoadDriver(ChaosOptions options, String runId, List<DemoInstance> instances, long t0Nanos) {
    this.options = options;
    this.runId = runId;
    this.instances = instances;
    this.t0 = t0Nanos;
  }

  long nowMs() {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  int accepted() {
    return acceptedSet.size();
  }

  String key(int i) {
    return "chaos-" + runId + "-" + i;
  }

  /** The SKU of order {@code i}: seeded, the poison SKU for a share of the orders. */
  String sku(int i) {
    SplittableRandom r = new SplittableRandom(options.seed() * 1_000_003L + i);
    return r.nextDouble() < options.poisonShare() ? ChaosOptions.POISON_SKU : "sku-" + (i % 13);
  }

  /** Places every order, paced at the rate; returns when each one is accepted or gave up. */
  void run() throws InterruptedException {
    ExecutorService senders = Executors.newFixedThreadPool(SENDERS, r -> {
      Thread t = new Thread(r, "chaos-sender");
      t.setDaemon(true);
      return t;
    });
    long start = System.nanoTime();
    double nanosPerOrder = 1e9 / options.rate();
    List<Future<?>> done = new ArrayList<>();
    for (int s = 0; s < SENDERS; s++) {
      done.add(senders.submit(() -> {
        for (int i; (i = next.getAndIncrement()) < options.orders(); ) {
          parkUntil(start + (long) (i * nanosPerOrder));
          place(i);
        }
        return null;
      }));
    }
    try {
      for (Future<?> f : done) {
        f.get();
      }
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("a sender failed", e.getCause());
    } finally {
      senders.shutdownNow();
    }
  }

  private static void parkUntil(long deadlineNanos) {
    for (long left; (left = deadlineNanos - System.nanoTime()) > 0; ) {
      LockSupport.parkNanos(left);
      if (Thread.currentThread().isInterrupted()) {
        return;
      }
    }
  }

  private void place(int i) {
    String key = key(i);
    String sku = sku(i);
    int qty = 1 + i % 3;
    SplittableRandom r = new SplittableRandom(options.seed() * 7_919L + i);
    long giveUp = System.nanoTime() + GIVE_UP.toNanos();
    String kind = "first";
    for (int attempt = 0; System.nanoTime() < giveUp; attempt++) {
      Request answer = post(key, sku, qty, kind);
      if (answer.status() == 202) {
        accept(answer.orderId());
        if (r.nextDouble() < options.repeatShare()) {
          Request again = post(key, sku, qty, "repeat");
          if (again.status() == 202) {
            accept(again.orderId());
          }
        }
        return;
      }
      if (answer.status() >= 400 && answer.status() < 500 && answer.status() != 409
          && answer.status() != 408 && answer.status() != 429) {
        return; // 400, 404, 422: resending changes nothing; the checker judges it
      }
      kind = "retry";
      long backoffMs = Math.min(1_000, 50L << Math.min(attempt, 5));
      parkUntil(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoffMs));
    }
  }

  private void accept(String orderId) {
    if (orderId != null && acceptedSet.add(orderId)) {
      acceptedIds.add(orderId);
    }
  }

  /** An instance that is up, in turn; any instance if none is (the request then fails). */
  private DemoInstance pick() {
    int n = instances.size();
    int start = Math.floorMod(roundRobin.getAndIncrement(), n);
    for (int k = 0; k < n; k++) {
      DemoInstance d = instances.get((start + k) % n);
      if (d.up()) {
        return d;
      }
    }
    return instances.get(start);
  }

  private Request post(String key, String sku, int qty, String kind) {
    DemoInstance d = pick();
    long at = nowMs();
    String body = "{\"sku\":\"" + sku + "\",\"qty\":" + qty + "}";
    HttpRequest req = HttpRequest.newBuilder(d.base().resolve("/orders"))
        .timeout(REQUEST_TIMEOUT)
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
    Request result;
    try {
      HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
      String orderId = null;
      String error = null;
      if (resp.statusCode() == 202) {
        orderId = JSON.readTree(resp.body()).path("orderId").asText(null);
      } else {
        error = truncate(resp.body());
      }
      result = new Request(at, key, sku, qty, kind, d.index, resp.statusCode(), orderId,
          nowMs() - at, error);
    } catch (IOException e) {
      result = new Request(at, key, sku, qty, kind, d.index, -1, null, nowMs() - at,
          e.getClass().getSimpleName() + ": " + truncate(String.valueOf(e.getMessage())));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result = new Request(at, key, sku, qty, kind, d.index, -1, null, nowMs() - at,
          "interrupted");
    }
    requests.add(result);
    return result;
  }

  private static String truncate(String s) {
    return s == null || s.length() <= 200 ? s : s.substring(0, 200);
  }

  /** Reads the status of one order and records it; true if it is SUCCESS or FAILED. */
  boolean readStatus(String orderId) {
    DemoInstance d = pick();
    long at = nowMs();
    HttpRequest req = HttpRequest.newBuilder(d.base().resolve("/orders/" + orderId + "/status"))
        .timeout(REQUEST_TIMEOUT).GET().build();
    try {
      HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
      if (resp.statusCode() != 200) {
        return false;
      }
      JsonNode doc = JSON.readTree(resp.body());
      String status = doc.path("status").asText("");
      statuses.add(new StatusSeen(at, nowMs(), orderId, status));
      if (status.equals("SUCCESS") || status.equals("FAILED")) {
        terminal.add(orderId);
        return true;
      }
      return false;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Accepted orders not yet seen terminal. */
  List<String> unfinished() {
    List<String> out = new ArrayList<>();
    synchronized (acceptedIds) {
      for (String id : acceptedIds) {
        if (!terminal.contains(id)) {
          out.add(id);
        }
      }
    }
    return out;
  }

  /** Reads the status of up to {@code max} seeded-random unfinished orders (during the load). */
  void sampleStatuses(int max, SplittableRandom random) {
    List<String> open = unfinished();
    for (int k = 0; k < max && !open.isEmpty(); k++) {
      readStatus(open.remove(random.nextInt(open.size())));
    }
  }

  /**
   * Reads the status of every unfinished order, in rounds, until each is SUCCESS or FAILED or the
   * deadline passes.
   *
   * @return whether every accepted order was seen terminal
   */
  boolean settle(long deadlineNanos) throws InterruptedException {
    ExecutorService pool = Executors.newFixedThreadPool(8, r -> {
      Thread t = new Thread(r, "chaos-settle");
      t.setDaemon(true);
      return t;
    });
    try {
      while (true) {
        List<String> open = unfinished();
        if (open.isEmpty()) {
          return true;
        }
        if (System.nanoTime() >= deadlineNanos) {
          return false;
        }
        List<Future<?>> reads = new ArrayList<>();
        for (String id : open) {
          reads.add(pool.submit(() -> readStatus(id)));
        }
        for (Future<?> f : reads) {
          try {
            f.get();
          } catch (java.util.concurrent.ExecutionException e) {
            // a read that failed is simply read again next round
          }
        }
        if (!unfinished().isEmpty()) {
          parkUntil(Math.min(deadlineNanos, System.nanoTime() + 500_000_000L));
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }
}

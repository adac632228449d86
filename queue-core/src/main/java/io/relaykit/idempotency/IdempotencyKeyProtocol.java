package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import io.relaykit.internal.Digests;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The server side of the {@code Idempotency-Key} HTTP header (IETF draft
 * "draft-ietf-httpapi-idempotency-key-header"), without HTTP types: any server (the demo's JDK
 * server, the Spring starter's filter) parses the header, fingerprints the request and asks
 * {@link #begin} what to do.
 *
 * <pre>
 *   key missing or blank                     400 (MISSING_KEY)
 *   key too long or not printable ASCII      400 (INVALID_KEY)
 *   answer kept, different fingerprint       422 (KEY_REUSED)
 *   answer kept, same fingerprint            replay the first answer
 *   the key's claim is held by a live lease  409 (IN_PROGRESS)
 *   the key is DONE but no answer is kept    410 (ANSWER_NOT_KEPT): processed, answer lost
 *   otherwise                                proceed: run the request, then finish or abandon
 * </pre>
 *
 * <p>The state machine is the {@link IdempotencyStore}'s, under {@code namespace + key}: {@link
 * #begin} claims with the lease, {@link #finish} saves the answer into the {@link
 * IdempotentAnswerStore} <em>before</em> it completes the claim (so a crash between the two leaves
 * an answer that the next {@code begin} replays, never a DONE key without one), and {@link
 * #abandon} releases the claim so the client's retry runs (a request that threw is not stuck in
 * progress). A 5xx answer is not kept either: {@link #finish} releases the claim, as the draft
 * lets servers do for server errors. An answer whose {@linkplain IdempotentAnswer#encodedSize()
 * stored size} is over {@code maxAnswerBytes} is kept {@linkplain IdempotentAnswer#withoutBody()
 * without its body}: the client that asked first gets it in full, a repeat gets 410.
 *
 * <p>Costs: {@code begin} is one answer-store read, plus one claim when nothing is kept; {@code
 * finish} is one save and one complete. When the idempotency store or the answer store fails in
 * {@code begin}, the exception propagates (the server answers 5xx, nothing ran); in {@code finish},
 * the work has happened, so failures are caught and reported as a {@link Completion} (the claim
 * stays until its lease lapses if {@code complete} failed; a repeat then replays the saved answer).
 * Thread-safe when its stores are.
 */
public final class IdempotencyKeyProtocol {

  /** The header's name in the draft. */
  public static final String HEADER = "Idempotency-Key";
  /** The default longest key, in characters. */
  public static final int DEFAULT_MAX_KEY_LENGTH = 255;
  /** The default bound on a kept answer's stored size: 64 KiB. */
  public static final int DEFAULT_MAX_ANSWER_BYTES = 64 * 1024;
  /** The default claim lease: how long a request may run before a repeat may take it over. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
  /** The default prefix of keys in the idempotency store. */
  public static final String DEFAULT_NAMESPACE = "http:";
  /**
   * The response headers a replay repeats (lower case): those describing the representation and
   * where to go next. Never {@code Set-Cookie}, {@code Date}, hop-by-hop or length headers.
   */
  public static final Set<String> REPLAYED_HEADERS = Set.of("content-type", "content-language",
      "content-location", "location", "retry-after", "cache-control", "etag", "last-modified",
      "expires", "vary", "link");

  private static final System.Logger LOG =
      System.getLogger(IdempotencyKeyProtocol.class.getName());

  private final IdempotencyStore store;
  private final IdempotentAnswerStore answers;
  private final String header;
  private final String namespace;
  private final Duration lease;
  private final int maxKeyLength;
  private final int maxAnswerBytes;

  private IdempotencyKeyProtocol(Builder b) {
    this.store = b.store;
    this.answers = b.answers;
    this.header = b.header;
    this.namespace = b.namespace;
    this.lease = b.lease;
    this.maxKeyLength = b.maxKeyLength;
    this.maxAnswerBytes = b.maxAnswerBytes;
  }

  /**
   * A builder over {@code store} (claims) and {@code answers} (first answers).
   *
   * @param store the idempotency store the keys are claimed in
   * @param answers where first answers are kept
   * @return a builder with the defaults above
   * @throws NullPointerException if an argument is null
   */
  public static Builder builder(IdempotencyStore store, IdempotentAnswerStore answers) {
    return new Builder(Objects.requireNonNull(store, "store"),
        Objects.requireNonNull(answers, "answers"));
  }

  /** Why a request is refused; each reason has its HTTP status. */
  public enum Refusal {
    /** No key, or a blank one: 400. */
    MISSING_KEY(400),
    /** A key too long or with characters outside printable ASCII: 400. */
    INVALID_KEY(400),
    /** The key's kept answer was for a request with another fingerprint: 422. */
    KEY_REUSED(422),
    /** Another request with the key holds a live claim: 409; retry later. */
    IN_PROGRESS(409),
    /** The key was processed but its answer is not kept (over the bound, expired, lost): 410. */
    ANSWER_NOT_KEPT(410);

    private final int status;

    Refusal(int status) {
      this.status = status;
    }

    /**
     * The HTTP status the draft gives this reason.
     *
     * @return 400, 409, 410 or 422
     */
    public int status() {
      return status;
    }
  }

  /** What {@link #begin} decided. */
  public sealed interface Decision permits Proceed, Replay, Refuse {}

  /**
   * Send the kept first answer again.
   *
   * @param answer the first answer, with its body
   */
  public record Replay(IdempotentAnswer answer) implements Decision {
    /**
     * Checks the answer.
     *
     * @param answer the first answer; not null
     * @throws IllegalArgumentException if {@code answer} is null
     */
    public Replay {
      Checks.requireNonNull("answer", answer);
    }
  }

  /**
   * Answer with an error and do nothing.
   *
   * @param refusal why
   * @param message a sentence for the client
   */
  public record Refuse(Refusal refusal, String message) implements Decision {
    /**
     * Checks the components.
     *
     * @param refusal why; not null
     * @param message a sentence for the client; not blank
     * @throws IllegalArgumentException if a component is null or the message blank
     */
    public Refuse {
      Checks.requireNonNull("refusal", refusal);
      Checks.requireNonBlank("message", message);
    }

    /**
     * The HTTP status to answer.
     *
     * @return {@code refusal().status()}
     */
    public int status() {
      return refusal.status();
    }
  }

  /**
   * The caller owns the key: run the request, then {@link #finish} or {@link #abandon} exactly
   * once.
   */
  public static final class Proceed implements Decision {
    private final String key;
    private final String fingerprint;
    private final Claim claim;

    private Proceed(String key, String fingerprint, Claim claim) {
      this.key = key;
      this.fingerprint = fingerprint;
      this.claim = claim;
    }

    /**
     * The client's key.
     *
     * @return the validated key
     */
    public String key() {
      return key;
    }

    /**
     * The request's fingerprint.
     *
     * @return the fingerprint given to {@link #begin}
     */
    public String fingerprint() {
      return fingerprint;
    }

    @Override
    public String toString() {
      return "Proceed[key=" + key + "]";
    }
  }

  /** What {@link #finish} did with the answer. */
  public enum Completion {
    /** Saved in full and the key is DONE. */
    KEPT,
    /** Over the bound: saved without its body, the key is DONE; a repeat gets 410. */
    KEPT_WITHOUT_BODY,
    /** A 5xx answer: not saved, the claim released so a retry runs. */
    RELEASED,
    /** Saved, but the claim had been taken over (another request may have run too). */
    TAKEN_OVER,
    /** Saving failed: the claim is completed, a repeat gets 410 (the work is not run twice). */
    SAVE_FAILED,
    /** Saved, but completing (or releasing) the claim failed; a repeat replays once it is free. */
    COMPLETE_FAILED
  }

  /**
   * The key the client sent in {@code headerValue}. A draft {@code sf-string} ({@code "abc"}) is
   * unquoted; a bare token is taken as it is.
   *
   * @param headerValue the header's value, null if absent
   * @return the key
   * @throws IdempotencyKeyException (400) if the key is missing, blank, too long, or holds
   *     characters outside printable ASCII
   */
  public String parseKey(String headerValue) {
    if (headerValue == null || headerValue.isBlank()) {
      throw new IdempotencyKeyException(Refusal.MISSING_KEY, "the " + header
          + " header is required");
    }
    String key = headerValue.strip();
    if (key.length() >= 2 && key.startsWith("\"") && key.endsWith("\"")) {
      key = key.substring(1, key.length() - 1).replace("\\\"", "\"").replace("\\\\", "\\");
      if (key.isBlank()) {
        throw new IdempotencyKeyException(Refusal.MISSING_KEY, "the " + header
            + " header is required");
      }
    }
    if (key.length() > maxKeyLength) {
      throw new IdempotencyKeyException(Refusal.INVALID_KEY, "the " + header
          + " header must be at most " + maxKeyLength + " characters");
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new IdempotencyKeyException(Refusal.INVALID_KEY, "the " + header
            + " header must be printable ASCII; found U+" + String.format(Locale.ROOT, "%04X",
                (int) c) + " at " + i);
      }
    }
    return key;
  }

  /**
   * A fingerprint of a request: SHA-256 over its method, target and body (each length-prefixed,
   * so distinct requests never share an input), as 64 hex digits. Servers with a semantic notion
   * of "the same request" (the demo's sku and quantity) may use their own.
   *
   * @param method the request method
   * @param target the path and query the request was sent to
   * @param body the request's body
   * @return 64 lowercase hex digits
   * @throws NullPointerException if an argument is null
   */
  public static String fingerprint(String method, String target, byte[] body) {
    MessageDigest d = Digests.sha256();
    for (byte[] part : List.of(method.getBytes(StandardCharsets.UTF_8),
        target.getBytes(StandardCharsets.UTF_8), body)) {
      d.update(Integer.toString(part.length).getBytes(StandardCharsets.US_ASCII));
      d.update((byte) ':');
      d.update(part);
    }
    return Digests.hex(d.digest(), 32);
  }

  /**
   * Decides what to do with a request carrying {@code key} (from {@link #parseKey}).
   *
   * @param key the client's key
   * @param fingerprint the request's fingerprint; not blank
   * @return replay, refuse (422, 409, 410), or proceed (the caller now owns the key's claim)
   * @throws IllegalArgumentException if the key or fingerprint is blank, or the namespaced key is
   *     longer than the idempotency store accepts
   * @throws RuntimeException from either store when its backend fails (nothing was claimed)
   */
  public Decision begin(String key, String fingerprint) {
    Checks.requireNonBlank("key", key);
    Checks.requireNonBlank("fingerprint", fingerprint);
    Optional<Decision> kept = answered(key, fingerprint);
    if (kept.isPresent()) {
      return kept.get();
    }
    Claim claim = store.claim(namespace + key, lease);
    switch (claim.status()) {
      case CLAIMED:
        return new Proceed(key, fingerprint, claim);
      case IN_PROGRESS:
        return new Refuse(Refusal.IN_PROGRESS, "a request with this " + header
            + " is still in progress");
      default:
        // DONE: completed between the read and the claim, or its answer is gone.
        return answered(key, fingerprint).orElseGet(() -> new Refuse(Refusal.ANSWER_NOT_KEPT,
            "a request with this " + header + " was processed; its answer is no longer kept"));
    }
  }

  /**
   * What a repeat of {@code key} gets from the answer kept for it, without claiming anything:
   * replay, 422 for another fingerprint, 410 for an answer kept without its body.
   *
   * @param key the client's key
   * @param fingerprint the request's fingerprint
   * @return the decision, or empty if no answer is kept for the key
   * @throws RuntimeException from the answer store when its backend fails
   */
  public Optional<Decision> answered(String key, String fingerprint) {
    Optional<IdempotentAnswer> kept = answers.find(key);
    if (kept.isEmpty()) {
      return Optional.empty();
    }
    IdempotentAnswer a = kept.get();
    if (!a.fingerprint().equals(fingerprint)) {
      return Optional.of(new Refuse(Refusal.KEY_REUSED, "this " + header
          + " was used for a different request"));
    }
    if (!a.bodyKept()) {
      return Optional.of(new Refuse(Refusal.ANSWER_NOT_KEPT, "a request with this " + header
          + " was processed (status " + a.status() + ", " + a.bodyLength() + " bytes); its answer"
          + " was over the " + maxAnswerBytes + "-byte bound and is not kept"));
    }
    return Optional.of(new Replay(a));
  }

  /**
   * Keeps the first answer and completes the key; a 5xx answer releases it instead. Headers are
   * filtered to {@link #REPLAYED_HEADERS} (names compared without case); an answer over the bound
   * is kept without its body. Never throws for a backend failure: the request's work has happened
   * and its answer must still reach the client; failures are logged and returned.
   *
   * @param owned the decision {@link #begin} returned
   * @param status the answer's status
   * @param headers the answer's headers (any case)
   * @param body the answer's body
   * @return what was kept
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the status is outside 100..599
   */
  public Completion finish(Proceed owned, int status, Map<String, List<String>> headers,
      byte[] body) {
    Objects.requireNonNull(owned, "owned");
    if (status >= 500 && status <= 599) {
      try {
        store.release(owned.claim);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "releasing " + header + " " + owned.key
            + " after a " + status + " answer failed; it is retryable when its lease lapses", e);
        return Completion.COMPLETE_FAILED;
      }
      return Completion.RELEASED;
    }
    Map<String, List<String>> replayed = new LinkedHashMap<>();
    headers.forEach((name, values) -> {
      if (name != null && REPLAYED_HEADERS.contains(name.toLowerCase(Locale.ROOT))) {
        replayed.put(name, values);
      }
    });
    IdempotentAnswer answer = IdempotentAnswer.of(owned.fingerprint, status, replayed, body);
    boolean whole = answer.encodedSize() <= maxAnswerBytes;
    Completion done = whole ? Completion.KEPT : Completion.KEPT_WITHOUT_BODY;
    try {
      answers.save(owned.key, whole ? answer : answer.withoutBody());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "saving the answer for " + header + " " + owned.key
          + " failed; the key is completed and a repeat gets 410", e);
      done = Completion.SAVE_FAILED;
    }
    try {
      if (!store.complete(owned.claim)) {
        return done == Completion.SAVE_FAILED ? done : Completion.TAKEN_OVER;
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "completing " + header + " " + owned.key
          + " failed; its claim lapses after the lease", e);
      return Completion.COMPLETE_FAILED;
    }
    return done;
  }

  /**
   * Releases the key after the request failed (threw), so the client's retry runs.
   *
   * @param owned the decision {@link #begin} returned
   * @return true if the claim was released; false if it had been taken over
   * @throws NullPointerException if {@code owned} is null
   * @throws RuntimeException from the idempotency store when its backend fails (the claim then
   *     lapses after its lease)
   */
  public boolean abandon(Proceed owned) {
    Objects.requireNonNull(owned, "owned");
    return store.release(owned.claim);
  }

  /**
   * The bound on a kept answer's stored size.
   *
   * @return bytes
   */
  public int maxAnswerBytes() {
    return maxAnswerBytes;
  }

  /**
   * The header this protocol reads (for messages and for servers that read it).
   *
   * @return the header name
   */
  public String header() {
    return header;
  }

  /** Builds an {@link IdempotencyKeyProtocol}; every setter checks its argument. */
  public static final class Builder {
    private final IdempotencyStore store;
    private final IdempotentAnswerStore answers;
    private String header = HEADER;
    private String namespace = DEFAULT_NAMESPACE;
    private Duration lease = DEFAULT_LEASE;
    private int maxKeyLength = DEFAULT_MAX_KEY_LENGTH;
    private int maxAnswerBytes = DEFAULT_MAX_ANSWER_BYTES;

    private Builder(IdempotencyStore store, IdempotentAnswerStore answers) {
      this.store = store;
      this.answers = answers;
    }

    /**
     * The header's name, for messages; default {@link #HEADER}.
     *
     * @param header a header name; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code header} is null or blank
     */
    public Builder header(String header) {
      this.header = Checks.requireNonBlank("header", header);
      return this;
    }

    /**
     * The prefix of keys in the idempotency store, so HTTP keys never collide with message
     * keys; default {@link #DEFAULT_NAMESPACE}.
     *
     * @param namespace the prefix; not null (empty allowed)
     * @return this builder
     * @throws IllegalArgumentException if {@code namespace} is null
     */
    public Builder namespace(String namespace) {
      this.namespace = Checks.requireNonNull("namespace", namespace);
      return this;
    }

    /**
     * How long a request owns its key before a repeat may take it over; default {@link
     * #DEFAULT_LEASE}. Longer than the slowest request.
     *
     * @param lease positive
     * @return this builder
     * @throws IllegalArgumentException if {@code lease} is null or not positive
     */
    public Builder lease(Duration lease) {
      this.lease = Checks.requirePositive("lease", lease);
      return this;
    }

    /**
     * The longest key accepted; default {@link #DEFAULT_MAX_KEY_LENGTH}.
     *
     * @param maxKeyLength 1 .. the idempotency store's bound minus the namespace
     * @return this builder
     * @throws IllegalArgumentException if {@code maxKeyLength} is not positive
     */
    public Builder maxKeyLength(int maxKeyLength) {
      this.maxKeyLength = Checks.requirePositive("maxKeyLength", maxKeyLength);
      return this;
    }

    /**
     * The bound on a kept answer's stored size; default {@link #DEFAULT_MAX_ANSWER_BYTES}.
     *
     * @param maxAnswerBytes positive
     * @return this builder
     * @throws IllegalArgumentException if {@code maxAnswerBytes} is not positive
     */
    public Builder maxAnswerBytes(int maxAnswerBytes) {
      this.maxAnswerBytes = Checks.requirePositive("maxAnswerBytes", maxAnswerBytes);
      return this;
    }

    /**
     * The protocol.
     *
     * @return a protocol with these settings
     * @throws IllegalArgumentException if the namespace plus the longest key is longer than
     *     {@link IdempotencyStore#MAX_KEY_LENGTH}
     */
    public IdempotencyKeyProtocol build() {
      if (namespace.length() + maxKeyLength > IdempotencyStore.MAX_KEY_LENGTH) {
        throw new IllegalArgumentException("maxKeyLength " + maxKeyLength + " plus namespace '"
            + namespace + "' exceeds the store's " + IdempotencyStore.MAX_KEY_LENGTH
            + " characters");
      }
      return new IdempotencyKeyProtocol(this);
    }
  }
}

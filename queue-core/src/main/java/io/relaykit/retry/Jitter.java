package io.relaykit.retry;

/**
 * How a {@link Backoff} spreads a computed delay so that many clients that failed together do not
 * retry together.
 *
 * <p>With {@code d} the capped exponential delay:
 * <ul>
 *   <li>{@link #NONE}: exactly {@code d}.</li>
 *   <li>{@link #FULL}: uniform in {@code [0, d]}. Spreads load best; a retry may come at once.</li>
 *   <li>{@link #EQUAL}: uniform in {@code [d/2, d]}. Keeps at least half of the wait.</li>
 * </ul>
 */
public enum Jitter {
  /** No jitter: the delay is exactly the capped delay. */
  NONE,
  /** Full jitter: uniform in {@code [0, d]}. */
  FULL,
  /** Equal jitter: uniform in {@code [d/2, d]}. */
  EQUAL
}

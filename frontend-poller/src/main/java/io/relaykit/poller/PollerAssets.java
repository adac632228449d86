package io.relaykit.poller;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * The browser poller, {@code relaykit-poller.js}: plain JavaScript, no build step, with the same
 * semantics as {@link StatusPoller} (one request in flight, capped exponential backoff with full
 * jitter, {@code Retry-After}, {@code RelayKitPoller.pollAfter(response)} to wait the 202's
 * {@code Retry-After} before the first request, deadline, cancel) and one more: it stops when the
 * page is hidden or left. Its clock and timers can be injected through options, for tests. Serve
 * {@link #browserPollerScript()} at a URL of your choice with content type {@link #JAVASCRIPT}.
 */
public final class PollerAssets {

  /** The content type to serve the script with. */
  public static final String JAVASCRIPT = "text/javascript; charset=utf-8";

  private static final String SCRIPT = "static/relaykit-poller.js";

  private PollerAssets() {}

  /**
   * The script's bytes, read from this module's resources.
   *
   * @return the script, UTF-8, served with {@link #JAVASCRIPT}
   */
  public static byte[] browserPollerScript() {
    try (InputStream in = PollerAssets.class.getResourceAsStream(SCRIPT)) {
      if (in == null) {
        throw new IllegalStateException("resource " + SCRIPT + " is missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

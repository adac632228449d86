package io.relaykit.test;

/**
 * The failure {@link TestRelayKit#failNext} and {@link TestRelayKit#failingFirst} throw in place of
 * a handler: a plain runtime exception, so the default failure classifier calls it retryable.
 */
public final class InjectedFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * A failure saying what was failed.
   *
   * @param message which delivery, and which of how many injected failures
   */
  public InjectedFailure(String message) {
    super(message);
  }
}

package io.relaykit.examples;

/**
 * The demo cannot start because a service it needs is not there: its message is one line that
 * names the service, its address and how to start one. {@link CheckoutDemo} prints just that line
 * (no stack trace) and exits with code 1; the operator CLI does the same.
 */
final class DemoStartupException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  DemoStartupException(String oneLine) {
    super(oneLine, null, false, false);
  }
}

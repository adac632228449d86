package io.relaykit.spring.boot;

/**
 * {@code relaykit.console.enabled=true} in an application that cannot serve the console safely:
 * without Spring Security on the class path, or without a Spring MVC servlet web server. Thrown
 * while the context starts; {@link ConsoleFailureAnalyzer} reports it as its message and what to
 * do.
 */
public final class ConsoleSetupException extends IllegalStateException {

  /** The serialized form's version. */
  private static final long serialVersionUID = 1L;

  /** What to do about it. */
  private final String action;

  /**
   * A refusal to start the console.
   *
   * @param message what is missing, naming {@code relaykit.console.enabled}
   * @param action what to do about it
   */
  public ConsoleSetupException(String message, String action) {
    super(message);
    this.action = action;
  }

  /**
   * What to do about it.
   *
   * @return the advice, one or two sentences
   */
  public String action() {
    return action;
  }
}

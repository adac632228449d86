package io.relaykit.spring.boot;

import io.relaykit.internal.ClientVersionException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a start that failed on a client library older than relaykit's floor into Spring Boot's
 * short report: the one line naming the library, the version found and the floor, and what to do,
 * without a stack trace.
 */
public final class ClientVersionFailureAnalyzer
    extends AbstractFailureAnalyzer<ClientVersionException> {

  /** Created by Spring Boot from {@code META-INF/spring.factories}. */
  public ClientVersionFailureAnalyzer() {}

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, ClientVersionException cause) {
    return new FailureAnalysis(cause.getMessage(), "Upgrade the library named above, or remove"
        + " the version property or override that pins it below the floor (relaykit's starter"
        + " README lists every floor).", cause);
  }
}

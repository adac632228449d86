package io.relaykit.spring.boot;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a start that failed because the operator console was enabled where it cannot be served
 * safely ({@link ConsoleSetupException}: no Spring Security, no servlet web server) into Spring
 * Boot's short report naming {@code relaykit.console.enabled} and what to do, without a stack
 * trace.
 */
public final class ConsoleFailureAnalyzer extends AbstractFailureAnalyzer<ConsoleSetupException> {

  /** Created by Spring Boot from {@code META-INF/spring.factories}. */
  public ConsoleFailureAnalyzer() {}

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, ConsoleSetupException cause) {
    return new FailureAnalysis(cause.getMessage(), cause.action(), cause);
  }
}

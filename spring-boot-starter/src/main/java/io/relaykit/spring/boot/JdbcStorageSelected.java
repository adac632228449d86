package io.relaykit.spring.boot;

import java.util.Locale;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when {@code relaykit.storage} selects the JDBC storage: {@code jdbc}, or its aliases
 * {@code h2} and {@code postgres}, in any case. Reads the one property and loads no relaykit-jdbc
 * class, so it is safe where that module is missing.
 */
final class JdbcStorageSelected implements Condition {

  @Override
  public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
    String storage = context.getEnvironment().getProperty("relaykit.storage");
    return storage != null && RelaykitEnvironment.JDBC_STORAGES
        .contains(storage.strip().toLowerCase(Locale.ROOT));
  }
}

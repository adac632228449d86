package io.relaykit.examples.bootapp;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@link RelaykitAppTest} on H2 in memory, relaykit's JDBC storage in the same database. */
class RelaykitAppH2Test extends RelaykitAppTest {
  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url",
        () -> "jdbc:h2:mem:bootapp_relaykit_" + AbstractDeliveryTest.RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
  }
}

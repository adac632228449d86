package io.relaykit.spring.jpa;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@link AbstractJpaOutboxTest} on H2 (in memory, a database of its own). */
@SpringBootTest(classes = JpaApp.class)
class H2JpaOutboxTest extends AbstractJpaOutboxTest {
  static final String DB = unique("jpa");
  static final String PREFIX = unique("rk") + "_";

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.autoconfigure.exclude", () -> EXCLUDE);
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:" + DB + ";DB_CLOSE_DELAY=-1");
    r.add("spring.jpa.hibernate.ddl-auto", () -> "create-drop");
    r.add("spring.jpa.open-in-view", () -> "false");
    r.add("relaykit.storage", () -> "h2");
    r.add("relaykit.h2.table-prefix", () -> PREFIX);
  }
}

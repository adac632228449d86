package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.storage.jdbc.Dialect;
import io.relaykit.storage.jdbc.JdbcStorage;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** relaykit.storage=jdbc and its aliases h2 and postgres, and the former relaykit.h2.* keys. */
class JdbcStorageNamesTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
          RelaykitAutoConfiguration.class))
      .withPropertyValues("relaykit.spring.relay.enabled=false");

  private static String h2Url() {
    return "spring.datasource.url=jdbc:h2:mem:" + unique("names") + ";DB_CLOSE_DELAY=-1";
  }

  @Test
  @DisplayName("jdbc, h2 and postgres all select the JDBC storage on the application's DataSource")
  void everyNameSelectsJdbc() {
    for (String name : new String[] {"jdbc", "h2", "JDBC"}) {
      String prefix = unique("rk") + "_";
      runner.withPropertyValues(h2Url(), "relaykit.storage=" + name,
          "relaykit.jdbc.table-prefix=" + prefix).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            JdbcStorage storage = ctx.getBean(JdbcStorage.class);
            assertThat(storage.dialect()).as(name).isEqualTo(Dialect.H2);
            assertThat(storage.tablePrefix()).as(name).isEqualTo(prefix);
          });
    }
  }

  @Test
  @DisplayName("relaykit.storage=postgres on a DataSource that is not PostgreSQL fails the start"
      + " naming both")
  void postgresOnH2IsRefused() {
    runner.withPropertyValues(h2Url(), "relaykit.storage=postgres").run(ctx ->
        assertThat(ctx).getFailure().rootCause().isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("relaykit.storage=postgres").hasMessageContaining("jdbc:h2:"));
  }

  @Test
  @DisplayName("a former relaykit.h2.* key in application properties still configures the storage")
  void formerKeysStillWork() {
    String prefix = unique("old") + "_";
    runner.withPropertyValues(h2Url(), "relaykit.storage=h2", "relaykit.h2.table-prefix=" + prefix)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(JdbcStorage.class).tablePrefix()).isEqualTo(prefix);
        });
  }
}

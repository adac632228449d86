package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.RelaySettings;
import io.relaykit.config.RetrySettings;
import io.relaykit.config.Settings;
import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.support.TransactionTemplate;

class RelaykitAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class));

  @Test
  void nothingConfiguredMeansInMemoryWithCoresDefaults() {
    runner.run(ctx -> {
      assertThat(ctx).hasSingleBean(InMemoryOutboxStore.class).doesNotHaveBean(JdbcStorage.class);
      Settings s = ctx.getBean(Settings.class);
      assertThat(RelaySettings.from(s)).isEqualTo(RelaySettings.from(Settings.empty()));
      assertThat(RetrySettings.from(s)).isEqualTo(RetrySettings.from(Settings.empty()));
    });
  }

  @Test
  void relaykitPropertiesReachCoresSettings() {
    runner.withPropertyValues("relaykit.relay.batch-size=7", "relaykit.relay.lease=45s",
        "relaykit.retry.max-attempts=3").run(ctx -> {
          Settings s = ctx.getBean(Settings.class);
          assertThat(RelaySettings.from(s).batchSize()).isEqualTo(7);
          assertThat(RelaySettings.from(s).lease()).isEqualTo(Duration.ofSeconds(45));
          assertThat(s.getInt("relaykit.retry.max-attempts", 0)).isEqualTo(3);
        });
  }

  @Test
  void aBadValueFailsTheStartNamingTheKey() {
    runner.withPropertyValues("relaykit.relay.lease=soon").run(ctx ->
        assertThat(ctx).getFailure().rootCause().hasMessageContaining("relaykit.relay.lease"));
  }

  @Test
  @org.junit.jupiter.api.DisplayName("an unknown relaykit.storage fails the start naming the"
      + " property, the value and the allowed values (not a missing bean)")
  void anUnknownStorageFailsTheStartNamingTheAllowedValues() {
    runner.withPropertyValues("relaykit.storage=cassandra").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("relaykit.storage=cassandra")
            .hasMessageContaining("[memory, jdbc, h2, postgres]"));
  }

  @Test
  @org.junit.jupiter.api.DisplayName("an unknown relaykit.transport fails the start naming the"
      + " property, the value and the allowed values (not a missing bean)")
  void anUnknownTransportFailsTheStartNamingTheAllowedValues() {
    runner.withPropertyValues("relaykit.transport=pulsar").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("relaykit.transport=pulsar")
            .hasMessageContaining("[memory, kafka, rabbitmq]"));
  }

  @Test
  @org.junit.jupiter.api.DisplayName("with the application's own Settings bean, an unknown"
      + " storage or transport still fails naming it")
  void anUnknownBackendFailsBesideYourOwnSettings() {
    runner.withBean(Settings.class, Settings::empty).withPropertyValues("relaykit.transport=nats")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.transport=nats")
            .hasMessageContaining("[memory, kafka, rabbitmq]"));
    runner.withBean(Settings.class, Settings::empty).withPropertyValues("relaykit.storage=redis")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.storage=redis is not wired"));
  }

  @Test
  @org.junit.jupiter.api.DisplayName("an unknown storage fails first, even with a web, Actuator"
      + " and listener context around it")
  void anUnknownStorageFailsBeforeAnyBeanNeedsIt() {
    new org.springframework.boot.test.context.runner.WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
            RelaykitActuatorAutoConfiguration.class, RelaykitWebAutoConfiguration.class))
        .withPropertyValues("relaykit.storage=mongo", "relaykit.spring.idempotency.enabled=true")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.storage=mongo")
            .hasMessageContaining("[memory, jdbc, h2, postgres]"));
  }

  @Test
  void jdbcStorageWithoutADataSourceFailsTheStartSayingSo() {
    runner.withPropertyValues("relaykit.storage=h2").run(ctx ->
        assertThat(ctx).getFailure().rootCause().hasMessageContaining("needs one DataSource"));
  }

  @Test
  void inMemoryAppendLandsOnCommitOnlyAndIsRefusedOutsideATransaction() {
    // No relay: it would race the test for m1 (it runs with the context).
    runner.withPropertyValues("relaykit.spring.relay.enabled=false").run(ctx -> {
      TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
      TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(
          new DriverManagerDataSource("jdbc:h2:mem:" + java.util.UUID.randomUUID())));
      Message m1 = Message.builder().id("m1").type("t").payload("a").build();
      Message m2 = Message.builder().id("m2").type("t").payload("b").build();
      tx.executeWithoutResult(st -> outbox.append("d", m1));
      tx.executeWithoutResult(st -> {
        outbox.append("d", m2);
        st.setRollbackOnly();
      });
      assertThatThrownBy(() -> outbox.append("d", m2)).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("outside a Spring transaction");
      assertThat(outbox.store().claim("r", 10, Duration.ofSeconds(5), Instant.now()))
          .extracting(r -> r.message().id()).containsExactly("m1");
    });
  }

  @Test
  @org.junit.jupiter.api.DisplayName("a full bounded in-memory outbox refuses the append inside the"
      + " transaction, so the business rows roll back with it; nothing is lost after a commit")
  void fullInMemoryOutboxRefusesBeforeTheCommit() {
    InMemoryOutboxStore bounded = new InMemoryOutboxStore(java.time.InstantSource.system(),
        io.relaykit.outbox.OutboxBound.refuseAbove(1));
    TransactionalOutbox outbox = TransactionalOutbox.inMemory(bounded);
    DriverManagerDataSource db = new DriverManagerDataSource(
        "jdbc:h2:mem:" + java.util.UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    org.springframework.jdbc.core.JdbcTemplate jdbc =
        new org.springframework.jdbc.core.JdbcTemplate(db);
    jdbc.execute("CREATE TABLE orders (id VARCHAR(20) PRIMARY KEY)");
    TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(db));
    tx.executeWithoutResult(st -> {
      jdbc.update("INSERT INTO orders VALUES ('o1')");
      outbox.append("d", Message.builder().id("m1").type("t").payload("a").build());
    });
    assertThatThrownBy(() -> tx.executeWithoutResult(st -> {
      jdbc.update("INSERT INTO orders VALUES ('o2')");
      outbox.append("d", Message.builder().id("m2").type("t").payload("b").build());
    })).isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
    assertThat(jdbc.queryForList("SELECT id FROM orders", String.class))
        .as("the refused order rolled back").containsExactly("o1");
    assertThat(bounded.claim("r", 10, Duration.ofSeconds(5), Instant.now()))
        .extracting(r -> r.message().id()).containsExactly("m1");
  }
}

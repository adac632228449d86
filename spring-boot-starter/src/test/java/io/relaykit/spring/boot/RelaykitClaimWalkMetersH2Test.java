package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** The starter's JDBC outbox reports each claim's walk to the application's Micrometer binder. */
class RelaykitClaimWalkMetersH2Test {

  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  @AfterEach
  void close() {
    contexts.forEach(ConfigurableApplicationContext::close);
  }

  @Test
  @DisplayName("a relay claim on the starter's H2 outbox records the heads and rows it walked in"
      + " the application's registry")
  void relayClaimIsMeasured() {
    String prefix = unique("w") + "_";
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ActuatorApp.class)
        .web(WebApplicationType.NONE)
        .properties("spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=h2", "relaykit.jdbc.table-prefix=" + prefix,
            // The test runs the relay's cycle itself.
            "relaykit.spring.relay.enabled=false")
        .run();
    contexts.add(ctx);
    TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
    TransactionTemplate tx = new TransactionTemplate(
        new DataSourceTransactionManager(ctx.getBean(DataSource.class)));
    tx.executeWithoutResult(s -> {
      outbox.append("orders", Message.builder().id(unique("k")).type("order.placed")
          .key("customer-1").payload("{}").build());
      outbox.append("orders", Message.builder().id(unique("u")).type("order.placed")
          .payload("{}").build());
    });

    OutboxRelay.Batch batch = ctx.getBean(OutboxRelay.class).runOnce();
    assertThat(batch.sent()).isEqualTo(2);

    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    DistributionSummary heads = registry.find("relaykit.outbox.claim.heads.walked").summary();
    DistributionSummary rows = registry.find("relaykit.outbox.claim.rows.walked").summary();
    assertThat(heads).as("relaykit.outbox.claim.heads.walked").isNotNull();
    assertThat(rows).as("relaykit.outbox.claim.rows.walked").isNotNull();
    assertThat(heads.count()).as("claims measured").isPositive();
    assertThat(rows.count()).as("claims measured").isEqualTo(heads.count());
    assertThat(heads.max()).as("the keyed row's head").isGreaterThanOrEqualTo(1);
    assertThat(rows.totalAmount()).as("both rows read").isGreaterThanOrEqualTo(2);
  }
}

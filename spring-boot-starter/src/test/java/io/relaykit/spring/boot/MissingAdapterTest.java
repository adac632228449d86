package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * A storage or transport named in {@code relaykit.*} whose artifact is not on the class path fails
 * the start naming the artifact to add, rather than with a missing bean.
 */
class MissingAdapterTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class));

  @Test
  @DisplayName("relaykit.storage=h2 without relaykit-jdbc names relaykit-jdbc")
  void jdbcMissing() {
    runner.withClassLoader(new FilteredClassLoader(JdbcStorage.class))
        .withPropertyValues("relaykit.storage=h2")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("relaykit.storage (jdbc, h2 or postgres) needs"
                + " io.relaykit:relaykit-jdbc"));
  }

  @Test
  @DisplayName("relaykit.storage=h2 without Spring JDBC names spring-boot-starter-jdbc")
  void springJdbcMissing() {
    runner.withClassLoader(new FilteredClassLoader(DataSourceUtils.class))
        .withPropertyValues("relaykit.storage=h2")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("spring-boot-starter-jdbc"));
  }

  @Test
  @DisplayName("relaykit.transport=kafka without relaykit-kafka names relaykit-kafka")
  void kafkaMissing() {
    runner.withClassLoader(new FilteredClassLoader(KafkaPublisher.class))
        .withPropertyValues("relaykit.transport=kafka")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("needs io.relaykit:relaykit-kafka"));
  }

  @Test
  @DisplayName("relaykit.transport=rabbitmq without relaykit-rabbitmq names relaykit-rabbitmq")
  void rabbitMqMissing() {
    runner.withClassLoader(new FilteredClassLoader(RabbitMqPublisher.class))
        .withPropertyValues("relaykit.transport=rabbitmq")
        .run(ctx -> assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("needs io.relaykit:relaykit-rabbitmq"));
  }

  @Test
  @DisplayName("with every artifact present, the in-memory default starts")
  void nothingMissing() {
    runner.run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(TransactionalOutbox.class));
  }
}

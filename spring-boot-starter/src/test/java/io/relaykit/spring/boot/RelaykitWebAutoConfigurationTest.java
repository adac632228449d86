package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.IdempotencyKeyProtocol;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Completion;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Proceed;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Refuse;
import io.relaykit.idempotency.IdempotentAnswer;
import io.relaykit.idempotency.IdempotentAnswerStore;
import io.relaykit.idempotency.InMemoryIdempotentAnswerStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

@DisplayName("RelaykitWebAutoConfiguration")
class RelaykitWebAutoConfigurationTest {

  private final WebApplicationContextRunner web = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
          RelaykitWebAutoConfiguration.class));

  @Test
  @DisplayName("off by default; on with enabled=true in a servlet application")
  void optIn() {
    web.run(ctx -> assertThat(ctx).doesNotHaveBean(RelaykitIdempotencyFilter.class));
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true").run(ctx -> {
      assertThat(ctx).hasSingleBean(RelaykitIdempotencyFilter.class);
      assertThat(ctx.getBean(IdempotentAnswerStore.class))
          .isInstanceOf(InMemoryIdempotentAnswerStore.class);
    });
  }

  @Test
  @DisplayName("the Actuator's base path is not filtered (default /actuator, a custom one, none on its own port)")
  void actuatorExcluded() {
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true").run(ctx -> {
      RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
      assertThat(f.shouldNotFilter(post("/actuator/relaykitdeadletters"))).isTrue();
      assertThat(f.shouldNotFilter(post("/actuator"))).isTrue();
      assertThat(f.shouldNotFilter(post("/orders"))).isFalse();
      assertThat(f.shouldNotFilter(post("/actuatorish"))).isFalse();
    });
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true",
        "management.endpoints.web.base-path=/manage/").run(ctx -> {
          RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
          assertThat(f.shouldNotFilter(post("/manage/relaykitdeadletters"))).isTrue();
          assertThat(f.shouldNotFilter(post("/actuator/relaykitdeadletters"))).isFalse();
        });
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true",
        "management.server.port=9091").run(ctx ->
            assertThat(ctx.getBean(RelaykitIdempotencyFilter.class)
                .shouldNotFilter(post("/actuator/relaykitdeadletters"))).isFalse());
  }

  private static org.springframework.mock.web.MockHttpServletRequest post(String path) {
    return new org.springframework.mock.web.MockHttpServletRequest("POST", path);
  }

  @Test
  @DisplayName("not in an application that is not a servlet web application")
  void notWeb() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
            RelaykitWebAutoConfiguration.class))
        .withPropertyValues("relaykit.spring.idempotency.enabled=true")
        .run(ctx -> assertThat(ctx).hasNotFailed()
            .doesNotHaveBean(RelaykitIdempotencyFilter.class));
  }

  @Test
  @DisplayName("answers go to the database when the storage does")
  void jdbcAnswers() {
    String db = "webcfg" + UUID.randomUUID().toString().replace("-", "");
    web.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class))
        .withPropertyValues("relaykit.spring.idempotency.enabled=true", "relaykit.storage=h2",
            "relaykit.spring.relay.enabled=false",
            "spring.datasource.url=jdbc:h2:mem:" + db + ";DB_CLOSE_DELAY=-1")
        .run(ctx -> {
          assertThat(ctx).hasSingleBean(JdbcStorage.class);
          assertThat(ctx.getBean(IdempotentAnswerStore.class))
              .isInstanceOf(JdbcIdempotentAnswerStore.class);
          IdempotentAnswerStore answers = ctx.getBean(IdempotentAnswerStore.class);
          IdempotentAnswer a = IdempotentAnswer.of("fp", 201, Map.of("Location", List.of("/x")),
              "body".getBytes(StandardCharsets.UTF_8));
          answers.save("k", a);
          answers.save("k", a.withoutBody());
          assertThat(answers.find("k")).contains(a.withoutBody());
          assertThat(answers.find("other")).isEmpty();
        });
  }

  @Test
  @DisplayName("settings reach the protocol; a typo or a bad value fails the start naming the key")
  void settings() {
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true",
        "relaykit.spring.idempotency.header=X-Request-Key",
        "relaykit.spring.idempotency.max-answer-size=10").run(ctx -> {
          IdempotencyKeyProtocol p = ctx.getBean(IdempotencyKeyProtocol.class);
          assertThat(p.header()).isEqualTo("X-Request-Key");
          assertThat(p.maxAnswerBytes()).isEqualTo(10);
        });
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true",
        "relaykit.spring.idempotency.leese=5s").run(ctx -> assertThat(ctx).getFailure()
            .rootCause().hasMessageContaining("relaykit.spring.idempotency.lease"));
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true",
        "relaykit.spring.idempotency.paths=/a/{*x}/b").run(ctx -> assertThat(ctx).getFailure()
            .hasStackTraceContaining("path pattern '/a/{*x}/b' is malformed"));
  }

  @Test
  @DisplayName("an answer store that fails on save: the key is completed, a repeat gets 410")
  void failingAnswerStore() {
    web.withPropertyValues("relaykit.spring.idempotency.enabled=true")
        .withBean(IdempotentAnswerStore.class, () -> new IdempotentAnswerStore() {
          @Override
          public Optional<IdempotentAnswer> find(String key) {
            return Optional.empty();
          }

          @Override
          public void save(String key, IdempotentAnswer answer) {
            throw new IllegalStateException("database down");
          }
        }).run(ctx -> {
          IdempotencyKeyProtocol p = ctx.getBean(IdempotencyKeyProtocol.class);
          Proceed owned = (Proceed) p.begin("k", "fp");
          assertThat(p.finish(owned, 200, Map.of(), new byte[0]))
              .isEqualTo(Completion.SAVE_FAILED);
          assertThat(p.begin("k", "fp")).isInstanceOfSatisfying(Refuse.class,
              r -> assertThat(r.status()).isEqualTo(410));
        });
  }
}

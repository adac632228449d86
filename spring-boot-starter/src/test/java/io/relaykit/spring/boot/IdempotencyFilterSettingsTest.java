package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/** Bad relaykit.spring.idempotency.* values fail the start naming the key; bounds hold at the edge. */
@DisplayName("Idempotency-Key filter settings")
class IdempotencyFilterSettingsTest {

  private final WebApplicationContextRunner web = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
          RelaykitWebAutoConfiguration.class))
      .withPropertyValues("relaykit.spring.idempotency.enabled=true");

  @ParameterizedTest(name = "{0}={1}")
  @DisplayName("a blank or out-of-range value fails the start naming the key and the value")
  @CsvSource(delimiter = '|', value = {
      "relaykit.spring.idempotency.paths|' , '",
      "relaykit.spring.idempotency.paths|/a/{*x}/b",
      "relaykit.spring.idempotency.methods|,",
      "relaykit.spring.idempotency.header|' '",
      "relaykit.spring.idempotency.lease|0s",
      "relaykit.spring.idempotency.max-key-length|0",
      "relaykit.spring.idempotency.max-key-length|1000",
      "relaykit.spring.idempotency.max-request-size|0",
      "relaykit.spring.idempotency.max-answer-size|-1",
      "relaykit.spring.idempotency.max-answers|0"})
  void badValueNamesKey(String key, String value) {
    web.withPropertyValues(key + "=" + value).run(ctx -> assertThat(ctx).getFailure()
        .hasStackTraceContaining(key));
  }

  @Test
  @DisplayName("max-request-size=2147483647 (the largest int) accepts a small body instead of failing every request")
  void largestRequestSize() {
    web.withPropertyValues("relaykit.spring.idempotency.max-request-size=2147483647")
        .run(ctx -> {
          RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
          MockHttpServletRequest req = new MockHttpServletRequest("POST", "/orders");
          req.addHeader("Idempotency-Key", "k-largest");
          req.setContent("{}".getBytes(StandardCharsets.UTF_8));
          MockHttpServletResponse res = new MockHttpServletResponse();
          f.doFilter(req, res, new MockFilterChain(new jakarta.servlet.http.HttpServlet() {
            @Override
            protected void service(jakarta.servlet.http.HttpServletRequest rq,
                jakarta.servlet.http.HttpServletResponse rs) throws java.io.IOException {
              rs.setStatus(201);
              rs.getOutputStream().write(rq.getInputStream().readAllBytes());
            }
          }));
          assertThat(res.getStatus()).isEqualTo(201);
          assertThat(res.getContentAsString()).isEqualTo("{}");
        });
  }

  @Test
  @DisplayName("keys are scoped to the authenticated user: another user's same key and body runs, and never gets the first user's answer")
  void keysPerPrincipal() {
    web.run(ctx -> {
      RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
      MockHttpServletResponse alice = call(f, "alice", runs);
      MockHttpServletResponse bob = call(f, "bob", runs);
      MockHttpServletResponse aliceAgain = call(f, "alice", runs);
      assertThat(alice.getContentAsString()).isEqualTo("order 1 for alice");
      assertThat(bob.getStatus()).isEqualTo(201);
      assertThat(bob.getContentAsString()).isEqualTo("order 2 for bob");
      assertThat(aliceAgain.getContentAsString()).isEqualTo("order 1 for alice");
      assertThat(runs).hasValue(2);
    });
  }

  @Test
  @DisplayName("an anonymous key spelling a user's scoped key (u:<hash of alice>:<her key>) is a key of its own: it runs and never gets alice's answer")
  void anonymousCannotForgeUserScope() {
    web.run(ctx -> {
      RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
      MockHttpServletResponse alice = call(f, "alice", "same-key", runs);
      String hash = io.relaykit.internal.Digests.sha256Hex("alice", 8);
      java.util.Set<String> forgeries = new java.util.LinkedHashSet<>(java.util.List.of(
          "u:" + hash + ":same-key", "u:" + hash + ":8:same-key",
          "u:" + hash + ":" + "same-key".length() + ":same-key",
          RelaykitIdempotencyFilter.scope("alice", "same-key")));
      for (String forged : forgeries) {
        MockHttpServletResponse anonymous = call(f, null, forged, runs);
        assertThat(anonymous.getStatus()).as(forged).isEqualTo(201);
        assertThat(anonymous.getContentAsString()).as(forged).doesNotContain("for alice");
      }
      // A user whose name spells a scope does not reach alice's key either.
      MockHttpServletResponse mallory = call(f, "alice:same-key", "same-key", runs);
      assertThat(mallory.getContentAsString()).isEqualTo("order " + runs.get()
          + " for alice:same-key");
      assertThat(alice.getContentAsString()).isEqualTo("order 1 for alice");
      assertThat(call(f, "alice", "same-key", runs).getContentAsString())
          .isEqualTo("order 1 for alice");
      assertThat(runs).hasValue(forgeries.size() + 2);
    });
  }

  @Test
  @DisplayName("scopes never collide: anonymous keys and user keys of any name and key are distinct stored keys")
  void scopesAreInjective() {
    java.util.Set<String> seen = new java.util.HashSet<>();
    String[] names = {"a", "a:", ":a", "u", "alice", "alice:same-key", ""};
    String[] keys = {"k", ":k", "k:", "u:1:k", "a:1:k", "1:k", "same-key"};
    for (String key : keys) {
      assertThat(seen.add(RelaykitIdempotencyFilter.scope(null, key))).as("anonymous " + key)
          .isTrue();
      for (String name : names) {
        assertThat(seen.add(RelaykitIdempotencyFilter.scope(name, key)))
            .as(name + " / " + key).isTrue();
      }
    }
  }

  @Test
  @DisplayName("principal names that UTF-8 encodes alike (an unpaired surrogate becomes '?') are"
      + " distinct scopes: a user named \"bob\\uD800\" never gets the answers of \"bob?\"")
  void principalsEncodedAlikeAreDistinctScopes() {
    assertThat(RelaykitIdempotencyFilter.scope("bob\uD800", "same-key"))
        .isNotEqualTo(RelaykitIdempotencyFilter.scope("bob?", "same-key"));
    assertThat(RelaykitIdempotencyFilter.scope("\uDC00x", "k"))
        .isNotEqualTo(RelaykitIdempotencyFilter.scope("?x", "k"))
        .isNotEqualTo(RelaykitIdempotencyFilter.scope("\uFFFDx", "k"));
    web.run(ctx -> {
      RelaykitIdempotencyFilter f = ctx.getBean(RelaykitIdempotencyFilter.class);
      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
      MockHttpServletResponse first = call(f, "bob?", runs);
      MockHttpServletResponse second = call(f, "bob\uD800", runs);
      assertThat(first.getStatus()).isEqualTo(201);
      assertThat(second.getStatus()).isEqualTo(201);
      assertThat(runs).as("each user's request ran, neither replayed the other's").hasValue(2);
    });
  }

  private static MockHttpServletResponse call(RelaykitIdempotencyFilter f, String user,
      java.util.concurrent.atomic.AtomicInteger runs) throws Exception {
    return call(f, user, "same-key", runs);
  }

  private static MockHttpServletResponse call(RelaykitIdempotencyFilter f, String user,
      String key, java.util.concurrent.atomic.AtomicInteger runs) throws Exception {
    MockHttpServletRequest req = new MockHttpServletRequest("POST", "/orders");
    req.addHeader("Idempotency-Key", key);
    if (user != null) {
      req.setUserPrincipal(() -> user);
    }
    req.setContent("{\"sku\":\"a\"}".getBytes(StandardCharsets.UTF_8));
    MockHttpServletResponse res = new MockHttpServletResponse();
    f.doFilter(req, res, new MockFilterChain(new jakarta.servlet.http.HttpServlet() {
      @Override
      protected void service(jakarta.servlet.http.HttpServletRequest rq,
          jakarta.servlet.http.HttpServletResponse rs) throws java.io.IOException {
        rs.setStatus(201);
        rs.getOutputStream().write(("order " + runs.incrementAndGet() + " for "
            + (rq.getUserPrincipal() == null ? "anonymous" : rq.getUserPrincipal().getName()))
            .getBytes(StandardCharsets.UTF_8));
      }
    }));
    return res;
  }
}

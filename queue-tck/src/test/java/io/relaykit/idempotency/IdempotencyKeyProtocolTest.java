package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.idempotency.IdempotencyKeyProtocol.Completion;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Decision;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Proceed;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Refusal;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Refuse;
import io.relaykit.idempotency.IdempotencyKeyProtocol.Replay;
import io.relaykit.tck.FakeClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class IdempotencyKeyProtocolTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryIdempotencyStore store =
      new InMemoryIdempotencyStore(clock, Duration.ofHours(1));
  private final InMemoryIdempotentAnswerStore answers =
      new InMemoryIdempotentAnswerStore(clock, Duration.ofHours(1), 100);
  private final IdempotencyKeyProtocol protocol = IdempotencyKeyProtocol.builder(store, answers)
      .lease(Duration.ofSeconds(30)).maxKeyLength(20).maxAnswerBytes(300).build();

  private static final Map<String, List<String>> HEADERS = Map.of(
      "Content-Type", List.of("application/json"), "Location", List.of("/orders/1"),
      "Set-Cookie", List.of("session=secret"), "Date", List.of("today"));

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Proceed proceed(String key, String fingerprint) {
    Decision d = protocol.begin(key, fingerprint);
    assertThat(d).isInstanceOf(Proceed.class);
    return (Proceed) d;
  }

  @Nested
  @DisplayName("parseKey")
  class Keys {
    @Test
    @DisplayName("a missing or blank key is MISSING_KEY (400) naming the header")
    void missing() {
      for (String v : new String[] {null, "", "   ", "\"\""}) {
        assertThatThrownBy(() -> protocol.parseKey(v))
            .isInstanceOfSatisfying(IdempotencyKeyException.class, e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.MISSING_KEY);
              assertThat(e.status()).isEqualTo(400);
            }).hasMessage("the Idempotency-Key header is required");
      }
    }

    @Test
    @DisplayName("a key too long or not printable ASCII is INVALID_KEY (400)")
    void invalid() {
      assertThatThrownBy(() -> protocol.parseKey("x".repeat(21)))
          .isInstanceOfSatisfying(IdempotencyKeyException.class,
              e -> assertThat(e.refusal()).isEqualTo(Refusal.INVALID_KEY))
          .hasMessage("the Idempotency-Key header must be at most 20 characters");
      assertThatThrownBy(() -> protocol.parseKey("caf\u00e9"))
          .isInstanceOf(IdempotencyKeyException.class).hasMessageContaining("U+00E9 at 3");
      assertThatThrownBy(() -> protocol.parseKey("a\tb"))
          .isInstanceOf(IdempotencyKeyException.class).hasMessageContaining("U+0009");
    }

    @Test
    @DisplayName("a bare token is taken as it is, a draft sf-string is unquoted")
    void quoted() {
      assertThat(protocol.parseKey(" abc-1 ")).isEqualTo("abc-1");
      assertThat(protocol.parseKey("\"abc-1\"")).isEqualTo("abc-1");
      assertThat(protocol.parseKey("\"a\\\"b\"")).isEqualTo("a\"b");
    }

    @Test
    @DisplayName("the namespace plus the longest key must fit the store's key bound")
    void bound() {
      assertThatThrownBy(() -> IdempotencyKeyProtocol.builder(store, answers)
          .maxKeyLength(IdempotencyStore.MAX_KEY_LENGTH).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxKeyLength 512");
    }
  }

  @Nested
  @DisplayName("begin / finish / abandon")
  class StateMachine {
    @Test
    @DisplayName("a new key proceeds and holds the store's claim under the namespace")
    void proceeds() {
      Proceed p = proceed("k1", "fp");
      assertThat(store.status("http:k1")).contains(Claim.Status.CLAIMED);
      assertThat(p.key()).isEqualTo("k1");
    }

    @Test
    @DisplayName("the same key while the first runs is IN_PROGRESS (409)")
    void inProgress() {
      proceed("k1", "fp");
      Decision d = protocol.begin("k1", "fp");
      assertThat(d).isInstanceOfSatisfying(Refuse.class, r -> {
        assertThat(r.refusal()).isEqualTo(Refusal.IN_PROGRESS);
        assertThat(r.status()).isEqualTo(409);
      });
    }

    @Test
    @DisplayName("after finish the same request replays status, kept headers and body; no"
        + " Set-Cookie or Date")
    void replay() {
      Proceed p = proceed("k1", "fp");
      assertThat(protocol.finish(p, 201, HEADERS, bytes("{\"id\":1}"))).isEqualTo(Completion.KEPT);
      assertThat(store.status("http:k1")).contains(Claim.Status.DONE);
      Decision d = protocol.begin("k1", "fp");
      assertThat(d).isInstanceOfSatisfying(Replay.class, r -> {
        assertThat(r.answer().status()).isEqualTo(201);
        assertThat(r.answer().headers()).containsOnlyKeys("Content-Type", "Location");
        assertThat(new String(r.answer().body(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":1}");
      });
    }

    @Test
    @DisplayName("after finish a different fingerprint is KEY_REUSED (422)")
    void reused() {
      protocol.finish(proceed("k1", "fp"), 200, Map.of(), bytes("ok"));
      assertThat(protocol.begin("k1", "other")).isInstanceOfSatisfying(Refuse.class,
          r -> assertThat(r.status()).isEqualTo(422));
    }

    @Test
    @DisplayName("abandon releases the key: the retry proceeds")
    void abandon() {
      assertThat(protocol.abandon(proceed("k1", "fp"))).isTrue();
      assertThat(store.status("http:k1")).isEmpty();
      proceed("k1", "fp");
    }

    @Test
    @DisplayName("a 5xx answer is not kept: the key is released and the retry proceeds")
    void serverError() {
      assertThat(protocol.finish(proceed("k1", "fp"), 503, HEADERS, bytes("down")))
          .isEqualTo(Completion.RELEASED);
      assertThat(answers.find("k1")).isEmpty();
      proceed("k1", "fp");
    }

    @Test
    @DisplayName("an answer over the bound is kept without its body; a repeat gets 410 with"
        + " status and size")
    void overBound() {
      byte[] big = new byte[400];
      assertThat(protocol.finish(proceed("k1", "fp"), 200, HEADERS, big))
          .isEqualTo(Completion.KEPT_WITHOUT_BODY);
      IdempotentAnswer kept = answers.find("k1").orElseThrow();
      assertThat(kept.bodyKept()).isFalse();
      assertThat(kept.bodyLength()).isEqualTo(400);
      assertThat(kept.body()).isEmpty();
      assertThat(protocol.begin("k1", "fp")).isInstanceOfSatisfying(Refuse.class, r -> {
        assertThat(r.status()).isEqualTo(410);
        assertThat(r.message()).contains("status 200, 400 bytes").contains("300-byte bound");
      });
      assertThat(protocol.begin("k1", "other")).isInstanceOfSatisfying(Refuse.class,
          r -> assertThat(r.status()).isEqualTo(422));
    }

    @Test
    @DisplayName("a DONE key without a kept answer is ANSWER_NOT_KEPT (410), never run again")
    void doneWithoutAnswer() {
      Claim c = store.claim("http:k1", Duration.ofSeconds(5));
      store.complete(c);
      assertThat(protocol.begin("k1", "fp")).isInstanceOfSatisfying(Refuse.class,
          r -> assertThat(r.refusal()).isEqualTo(Refusal.ANSWER_NOT_KEPT));
    }

    @Test
    @DisplayName("an answer saved before a crash (claim never completed) is replayed")
    void savedNotCompleted() {
      Proceed p = proceed("k1", "fp");
      answers.save("k1", IdempotentAnswer.of("fp", 202, Map.of(), bytes("first")));
      assertThat(protocol.begin("k1", "fp")).isInstanceOf(Replay.class);
      assertThat(p.fingerprint()).isEqualTo("fp");
    }

    @Test
    @DisplayName("a failed save still completes the key: a repeat gets 410, the work is not run"
        + " twice")
    void saveFails() {
      IdempotencyKeyProtocol failing = IdempotencyKeyProtocol.builder(store,
          new IdempotentAnswerStore() {
            @Override
            public Optional<IdempotentAnswer> find(String key) {
              return Optional.empty();
            }

            @Override
            public void save(String key, IdempotentAnswer answer) {
              throw new IllegalStateException("disk full");
            }
          }).build();
      Proceed p = (Proceed) failing.begin("k2", "fp");
      assertThat(failing.finish(p, 200, Map.of(), bytes("ok"))).isEqualTo(Completion.SAVE_FAILED);
      assertThat(store.status("http:k2")).contains(Claim.Status.DONE);
      assertThat(failing.begin("k2", "fp")).isInstanceOfSatisfying(Refuse.class,
          r -> assertThat(r.status()).isEqualTo(410));
    }

    @Test
    @DisplayName("a lapsed lease is taken over; the first holder's finish reports TAKEN_OVER")
    void takenOver() {
      Proceed first = proceed("k1", "fp");
      clock.advance(Duration.ofSeconds(31));
      Proceed second = proceed("k1", "fp");
      assertThat(protocol.finish(second, 200, Map.of(), bytes("b"))).isEqualTo(Completion.KEPT);
      assertThat(protocol.finish(first, 200, Map.of(), bytes("a")))
          .isEqualTo(Completion.TAKEN_OVER);
    }
  }

  @Nested
  @DisplayName("IdempotentAnswer and the answer store")
  class Answers {
    @Test
    @DisplayName("encode/decode round-trips; corrupt or newer formats are refused by name")
    void codec() {
      IdempotentAnswer a = IdempotentAnswer.of("fp", 202,
          Map.of("Location", List.of("/x", "/y")), bytes("h\u00e9llo"));
      assertThat(IdempotentAnswer.decode(a.encode())).isEqualTo(a);
      assertThat(IdempotentAnswer.decode(a.withoutBody().encode())).isEqualTo(a.withoutBody());
      byte[] enc = a.encode();
      assertThatThrownBy(() -> IdempotentAnswer.decode(java.util.Arrays.copyOf(enc, 10)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("truncated");
      enc[0] = 9;
      assertThatThrownBy(() -> IdempotentAnswer.decode(enc))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("format 9");
      assertThatThrownBy(() -> IdempotentAnswer.of("fp", 99, Map.of(), new byte[0]))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("status");
    }

    @Test
    @DisplayName("the in-memory store forgets after retention and evicts the oldest past its"
        + " bound, counting it")
    void bounds() {
      InMemoryIdempotentAnswerStore s =
          new InMemoryIdempotentAnswerStore(clock, Duration.ofMinutes(1), 2);
      IdempotentAnswer a = IdempotentAnswer.of("fp", 200, Map.of(), new byte[0]);
      s.save("a", a);
      s.save("b", a);
      s.save("c", a);
      assertThat(s.find("a")).isEmpty();
      assertThat(s.evicted()).isEqualTo(1);
      assertThat(s.find("c")).contains(a);
      clock.advance(Duration.ofMinutes(1));
      assertThat(s.find("c")).isEmpty();
      assertThat(s.size()).isZero();
    }

    @Test
    @DisplayName("fingerprints differ for method, target and body, and are not fooled by"
        + " shifting bytes between parts")
    void fingerprints() {
      String f = IdempotencyKeyProtocol.fingerprint("POST", "/orders", bytes("{}"));
      assertThat(f).hasSize(64).isEqualTo(
          IdempotencyKeyProtocol.fingerprint("POST", "/orders", bytes("{}")));
      assertThat(f).isNotEqualTo(IdempotencyKeyProtocol.fingerprint("PUT", "/orders", bytes("{}")))
          .isNotEqualTo(IdempotencyKeyProtocol.fingerprint("POST", "/orders/", bytes("{}")))
          .isNotEqualTo(IdempotencyKeyProtocol.fingerprint("POST", "/orders", bytes("{ }")));
      assertThat(IdempotencyKeyProtocol.fingerprint("POST", "/a", bytes("b")))
          .isNotEqualTo(IdempotencyKeyProtocol.fingerprint("POST", "/ab", bytes("")));
    }
  }
}

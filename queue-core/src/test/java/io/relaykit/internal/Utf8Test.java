package io.relaykit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Utf8.length")
class Utf8Test {

  private static int encoded(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  @Test
  @DisplayName("is the length of the UTF-8 encoding, surrogate pairs and lone surrogates included")
  void matchesGetBytes() {
    for (String s : List.of("", "order-42", "caf\u00e9", "\u00ff\u0100\u07ff\u0800",
        "\u65e5\u672c\u8a9e", "\ud83d\ude00 smile", "lone \ud83d high", "lone \ude00 low",
        "\ude00\ud83d reversed", "end \ud83d", "\uffff\u0000", "\ud83d\ud83d\ude00 high, pair")) {
      assertThat(Utf8.length(s)).as(s).isEqualTo(encoded(s));
    }
  }

  @Test
  @DisplayName("counts 1, 2, 3 and 4 bytes by code point, and 1 for an unpaired surrogate ('?')")
  void bytesPerChar() {
    assertThat(Utf8.length("a")).isEqualTo(1);
    assertThat(Utf8.length("\u007f")).isEqualTo(1);
    assertThat(Utf8.length("\u0080")).isEqualTo(2);
    assertThat(Utf8.length("\u07ff")).isEqualTo(2);
    assertThat(Utf8.length("\u0800")).isEqualTo(3);
    assertThat(Utf8.length("\uffff")).isEqualTo(3);
    assertThat(Utf8.length("\ud83d\ude00")).isEqualTo(4);
    assertThat(Utf8.length("\ud800x")).as("lone high").isEqualTo(2);
    assertThat(Utf8.length("x\udc00")).as("lone low").isEqualTo(2);
    assertThat(Utf8.length("\ud800")).as("high at the end").isEqualTo(1);
  }

  @Test
  @DisplayName("a non-ASCII char is counted wherever it falls in or after an ASCII run")
  void asciiRunBoundaries() {
    for (String c : List.of("\u00e9", "\u20ac", "\ud83d\ude00", "\ud800")) {
      for (int at = 0; at <= 9; at++) {
        String s = "a".repeat(at) + c + "b".repeat(9 - at);
        assertThat(Utf8.length(s)).as("%s at %d", c, at).isEqualTo(encoded(s));
      }
    }
    for (int n = 0; n <= 9; n++) {
      assertThat(Utf8.length("x".repeat(n))).as("ASCII only, %d chars", n).isEqualTo(n);
    }
  }

  @Test
  @DisplayName("agrees with getBytes(UTF_8).length on random strings of every kind of char")
  void randomized() {
    SplittableRandom random = new SplittableRandom(20240607);
    for (int round = 0; round < 20_000; round++) {
      int length = random.nextInt(24);
      StringBuilder b = new StringBuilder(length);
      for (int i = 0; i < length; i++) {
        b.append(randomChar(random));
      }
      String s = b.toString();
      assertThat(Utf8.length(s)).as("round %d: %s", round, codes(s)).isEqualTo(encoded(s));
    }
  }

  /** Mostly ASCII, as real text is, with every other range, and surrogates paired or not. */
  private static char randomChar(SplittableRandom random) {
    return switch (random.nextInt(8)) {
      case 0 -> (char) random.nextInt(0x80, 0x800);
      case 1 -> (char) random.nextInt(0x800, 0xd800);
      case 2 -> (char) random.nextInt(0xd800, 0xdc00); // high surrogate
      case 3 -> (char) random.nextInt(0xdc00, 0xe000); // low surrogate
      case 4 -> (char) random.nextInt(0xe000, 0x10000);
      default -> (char) random.nextInt(0x80);
    };
  }

  private static String codes(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      b.append(String.format("\\u%04x", (int) s.charAt(i)));
    }
    return b.toString();
  }

  @Test
  @DisplayName("a null string is a clear IllegalArgumentException")
  void rejectsNull() {
    assertThatThrownBy(() -> Utf8.length(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be null");
  }

  /** Whether a strict encoder (one that reports malformed input) can encode {@code s}. */
  private static boolean strictlyEncodable(String s) {
    try {
      StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).encode(CharBuffer.wrap(s));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  @Test
  @DisplayName("firstUnpairedSurrogate finds a lone high or low surrogate, wherever it is, and nothing in pairs")
  void unpairedSurrogates() {
    assertThat(Utf8.firstUnpairedSurrogate("order-42")).isEqualTo(-1);
    assertThat(Utf8.firstUnpairedSurrogate("\ud83d\ude00 smile")).isEqualTo(-1);
    assertThat(Utf8.firstUnpairedSurrogate("lone \ud83d high")).isEqualTo(5);
    assertThat(Utf8.firstUnpairedSurrogate("lone \ude00 low")).isEqualTo(5);
    assertThat(Utf8.firstUnpairedSurrogate("\ude00\ud83d")).as("reversed pair").isZero();
    assertThat(Utf8.firstUnpairedSurrogate("end \ud83d")).isEqualTo(4);
    assertThat(Utf8.firstUnpairedSurrogate("\ud83d\ud83d\ude00")).as("high, then a pair")
        .isZero();
    assertThat(Utf8.firstUnpairedSurrogate("\ud83d\ude00\ude00")).as("a pair, then low")
        .isEqualTo(2);
  }

  @Test
  @DisplayName("a string is well-formed exactly when a strict UTF-8 encoder accepts it, on random strings")
  void wellFormedAgreesWithStrictEncoder() {
    SplittableRandom random = new SplittableRandom(20261201);
    for (int round = 0; round < 20_000; round++) {
      int length = random.nextInt(12);
      StringBuilder b = new StringBuilder(length);
      for (int i = 0; i < length; i++) {
        b.append(randomChar(random));
      }
      String s = b.toString();
      assertThat(Utf8.firstUnpairedSurrogate(s) < 0).as("round %d: %s", round, codes(s))
          .isEqualTo(strictlyEncodable(s));
    }
  }

  @Test
  @DisplayName("requireWellFormed returns a well-formed string and refuses another naming the field, index and char")
  void requireWellFormed() {
    assertThat(Utf8.requireWellFormed("eventId", "pay-\ud83d\ude00")).isEqualTo("pay-\ud83d\ude00");
    assertThatThrownBy(() -> Utf8.requireWellFormed("eventId", "pay-\ud83d"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("eventId").hasMessageContaining("U+D83D")
        .hasMessageContaining("index 4");
    assertThatThrownBy(() -> Utf8.requireWellFormed("eventId", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
  }

  @Test
  @DisplayName("firstUnstorable finds U+0000 and unpaired surrogates, for every char, and passes pairs")
  void unstorable() {
    for (int c = 0; c <= Character.MAX_VALUE; c++) {
      String s = "ab" + (char) c;
      boolean bad = c == 0 || Character.isSurrogate((char) c);
      assertThat(Utf8.firstUnstorable(s)).as("U+%04X", c).isEqualTo(bad ? 2 : -1);
    }
    assertThat(Utf8.firstUnstorable("x\uD83D\uDE00y")).isEqualTo(-1);
    assertThat(Utf8.firstUnstorable("x\uD83D\uDE00\u0000")).isEqualTo(3);
  }
}

package io.relaykit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class TextsTest {

  private static int bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  @Test
  @DisplayName("a string that fits is returned as it is, up to exactly the bound")
  void fits() {
    assertThat(Texts.truncateUtf8("", 3)).isEmpty();
    assertThat(Texts.truncateUtf8("abcdef", 6)).isEqualTo("abcdef");
    assertThat(Texts.truncateUtf8("é".repeat(5), 10)).isEqualTo("é".repeat(5));
  }

  @Test
  @DisplayName("a longer string keeps the longest prefix that fits with the mark")
  void cuts() {
    assertThat(Texts.truncateUtf8("abcdefg", 6)).isEqualTo("abc...");
    String cut = Texts.truncateUtf8("x".repeat(10_000), 2048);
    assertThat(cut).hasSize(2048).startsWith("xxx").endsWith(Texts.CUT_MARK);
  }

  @Test
  @DisplayName("multi-byte characters are counted in bytes and never split")
  void multiByte() {
    String euros = "€".repeat(100); // 3 bytes each
    String cut = Texts.truncateUtf8(euros, 20);
    assertThat(cut).isEqualTo("€".repeat(5) + "...");
    assertThat(bytes(cut)).isLessThanOrEqualTo(20);
    String emoji = "😀".repeat(10); // a surrogate pair, 4 bytes each
    String e = Texts.truncateUtf8(emoji, 13);
    assertThat(e).isEqualTo("😀😀...");
    assertThat(bytes(e)).isLessThanOrEqualTo(13);
    for (int max = 3; max < 45; max++) {
      String mixed = Texts.truncateUtf8("a€😀é".repeat(5), max);
      assertThat(bytes(mixed)).as("bound %d", max).isLessThanOrEqualTo(max);
      String kept = mixed.endsWith(Texts.CUT_MARK)
          ? mixed.substring(0, mixed.length() - Texts.CUT_MARK.length()) : mixed;
      assertThat(kept.isEmpty() || !Character.isHighSurrogate(kept.charAt(kept.length() - 1)))
          .as("no half surrogate pair kept at bound %d", max).isTrue();
    }
  }

  @Test
  @DisplayName("null and a bound below the mark are refused, naming what is wrong")
  void badInput() {
    assertThatThrownBy(() -> Texts.truncateUtf8(null, 10))
        .isInstanceOf(NullPointerException.class).hasMessage("s");
    assertThatThrownBy(() -> Texts.truncateUtf8("abc", 2))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBytes")
        .hasMessageContaining("2");
  }

  @Test
  @DisplayName("unpaired surrogates count as the one byte ('?') they encode to, and the bound holds")
  void unpairedSurrogates() {
    String lone = "\uD800".repeat(10); // 10 bytes in UTF-8: each becomes '?'
    assertThat(Texts.truncateUtf8(lone, 10)).isEqualTo(lone);
    String cut = Texts.truncateUtf8(lone, 9);
    assertThat(cut).isEqualTo("\uD800".repeat(6) + "...");
    assertThat(bytes(cut)).isEqualTo(9);
    String lowThenHigh = "\uDC00\uD800".repeat(4);
    assertThat(bytes(Texts.truncateUtf8(lowThenHigh, 5))).isLessThanOrEqualTo(5);
  }

  @Nested
  @DisplayName("truncateChars")
  class TruncateChars {

    @Test
    @DisplayName("a string of at most the bound is kept, the empty string and the exact bound too")
    void fits() {
      assertThat(Texts.truncateChars("", 0)).isEmpty();
      assertThat(Texts.truncateChars("abc", 3)).isEqualTo("abc");
      assertThat(Texts.truncateChars("😀", 2)).isEqualTo("😀");
    }

    @Test
    @DisplayName("a longer one keeps the bound's chars and gets the mark after them")
    void cuts() {
      assertThat(Texts.truncateChars("abcd", 3)).isEqualTo("abc...");
      assertThat(Texts.truncateChars("abcd", 0)).isEqualTo("...");
      assertThat(Texts.truncateChars("x".repeat(9000), 8192)).hasSize(8195);
    }

    @Test
    @DisplayName("a surrogate pair across the bound is dropped whole; unpaired surrogates are chars")
    void surrogates() {
      assertThat(Texts.truncateChars("a😀b", 2)).isEqualTo("a...");
      assertThat(Texts.truncateChars("a😀b", 3)).isEqualTo("a😀...");
      assertThat(Texts.truncateChars("\uD800\uD800\uD800", 2)).isEqualTo("\uD800\uD800...");
      assertThat(Texts.truncateChars("\uDC00\uDC00x", 1)).isEqualTo("\uDC00...");
    }

    @Test
    @DisplayName("prefixChars is the same cut without the mark")
    void prefixChars() {
      assertThat(Texts.prefixChars("", 0)).isEmpty();
      assertThat(Texts.prefixChars("abc", 3)).isEqualTo("abc");
      assertThat(Texts.prefixChars("abcd", 3)).isEqualTo("abc");
      assertThat(Texts.prefixChars("a😀b", 2)).isEqualTo("a");
      assertThat(Texts.prefixChars("\uD800\uD800x", 2)).isEqualTo("\uD800\uD800");
      assertThatThrownBy(() -> Texts.prefixChars("a", -1))
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("null and a negative bound are refused")
    void badInput() {
      assertThatThrownBy(() -> Texts.truncateChars(null, 1))
          .isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> Texts.truncateChars("a", -1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("maxChars must be >= 0, was -1");
    }
  }
}

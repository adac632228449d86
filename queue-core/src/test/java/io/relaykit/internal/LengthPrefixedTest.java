package io.relaykit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class LengthPrefixedTest {

  @Test
  @DisplayName("the format: length in chars, a colon, the chars; a null is '-'")
  void format() {
    assertThat(LengthPrefixed.encode("ab", null, "", "x:y")).isEqualTo("2:ab-0:3:x:y");
    assertThat(LengthPrefixed.encode(List.of())).isEmpty();
    assertThat(LengthPrefixed.decode("", false)).isEmpty();
    assertThat(LengthPrefixed.decode("2:ab-0:3:x:y", true))
        .containsExactly("ab", null, "", "x:y");
  }

  @Test
  @DisplayName("any content survives, unpaired surrogates, NUL, colons, dashes and newlines"
      + " included (seeded)")
  void roundTrips() {
    SplittableRandom random = new SplittableRandom(20261202L);
    char[] alphabet = {'a', ':', '-', '\n', '0', '9', '\u0000', '\uD800', '\uDC00', 'é', '€'};
    for (int round = 0; round < 500; round++) {
      List<String> values = new ArrayList<>();
      int n = random.nextInt(6);
      for (int i = 0; i < n; i++) {
        if (random.nextInt(5) == 0) {
          values.add(null);
          continue;
        }
        StringBuilder sb = new StringBuilder();
        int length = random.nextInt(12);
        for (int j = 0; j < length; j++) {
          sb.append(alphabet[random.nextInt(alphabet.length)]);
        }
        values.add(sb.toString());
      }
      assertThat(LengthPrefixed.decode(LengthPrefixed.encode(values), true))
          .as("round %d: %s", round, values).isEqualTo(values);
    }
  }

  @Test
  @DisplayName("a length that ends exactly at the end is whole; one past it is refused")
  void exactEnd() {
    assertThat(LengthPrefixed.decode("3:abc", false)).containsExactly("abc");
    assertThatThrownBy(() -> LengthPrefixed.decode("4:abc", false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 0: length 4 runs past the end (5 characters)");
  }

  @Test
  @DisplayName("what encode cannot have written is refused with the offset and what is wrong")
  void corrupt() {
    assertThatThrownBy(() -> LengthPrefixed.decode("2:ab3", false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 4: no ':' after a length");
    assertThatThrownBy(() -> LengthPrefixed.decode("x:ab", false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 0: length 'x' is not a number");
    assertThatThrownBy(() -> LengthPrefixed.decode(":ab", false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 0: length '' is not a number");
    assertThatThrownBy(() -> LengthPrefixed.decode("1:a-", false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 3: a null element ('-') where none is allowed");
    assertThatThrownBy(() -> LengthPrefixed.decode("-5:abc", true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("at offset 1: length 5 runs past the end (6 characters)");
    assertThat(LengthPrefixed.decode("-1:a", true)).isEqualTo(Arrays.asList(null, "a"));
  }
}

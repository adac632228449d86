package io.relaykit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class DigestsTest {

  @Test
  @DisplayName("SHA-256 and SHA-1 of the FIPS 180 example 'abc', in lowercase hex")
  void knownVectors() {
    assertThat(Digests.sha256Hex("abc", 32))
        .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assertThat(Digests.sha256Hex("abc", 16)).isEqualTo("ba7816bf8f01cfea414140de5dae2223");
    assertThat(Digests.sha1Hex("abc")).isEqualTo("a9993e364706816aba3e25717850c26c9cd0d89d");
    assertThat(Digests.sha256Hex("", 0)).isEmpty();
  }

  @Test
  @DisplayName("hex writes a prefix of the bytes, high nibble first, and refuses a bad count")
  void hex() {
    byte[] data = {0x00, 0x0f, (byte) 0xf0, (byte) 0xff};
    assertThat(Digests.hex(data, 4)).isEqualTo("000ff0ff");
    assertThat(Digests.hex(data, 1)).isEqualTo("00");
    assertThatThrownBy(() -> Digests.hex(data, 5))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("bytes must be 0..4, was 5");
    assertThatThrownBy(() -> Digests.hex(data, -1))
        .isInstanceOf(IllegalArgumentException.class);
  }
}

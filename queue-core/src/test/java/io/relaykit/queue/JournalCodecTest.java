package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class JournalCodecTest {

  @Test
  @DisplayName("the buffer grown for one huge record (and NUL-filled payload) shrinks back at the next record")
  void bufferShrinksAfterHugeRecord() {
    JournalCodec codec = new JournalCodec();
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    String huge = "\u0000".repeat(4 * 1024 * 1024);
    codec.append(new QueuedEvent("big", "n", huge, Priority.LOW, t, 0, t, null));
    assertThat(codec.array().length).isGreaterThan(4 * 1024 * 1024);
    codec.forget("small");
    assertThat(codec.array().length).isLessThanOrEqualTo(JournalCodec.RETAINED_BUFFER);
  }
}

package io.relaykit.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TapeQueueFileTest {

  @Test
  @DisplayName("adds lay out Tape's versioned format: header, then length-prefixed elements, the file doubling as it fills")
  void layout() throws IOException {
    Path dir = BenchDirs.create("tape-test");
    try {
      Path file = dir.resolve("queue.file");
      byte[][] elements = new byte[40][];
      try (TapeQueueFile queue = new TapeQueueFile(file)) {
        for (int i = 0; i < elements.length; i++) {
          elements[i] = ("element " + i + " " + "x".repeat(150)).getBytes(StandardCharsets.UTF_8);
          queue.add(elements[i]);
        }
        assertThat(queue.size()).isEqualTo(40);
      }
      ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file));
      assertThat(b.getInt(0)).isEqualTo(0x80000001);
      long length = b.getLong(4);
      assertThat(length).isEqualTo(8192).isEqualTo(b.capacity());
      assertThat(b.getInt(12)).isEqualTo(40);
      assertThat(b.getLong(16)).isEqualTo(32);
      long position = 32;
      for (int i = 0; i < elements.length; i++) {
        int n = b.getInt((int) position);
        byte[] read = new byte[n];
        b.get((int) position + 4, read);
        assertThat(read).isEqualTo(elements[i]);
        if (i < elements.length - 1) {
          position += 4 + n;
        }
      }
      assertThat(b.getLong(24)).as("last element position").isEqualTo(position);

      try (TapeQueueFile reopened = new TapeQueueFile(file)) {
        assertThat(reopened.size()).isEqualTo(40);
        reopened.add(elements[0]);
        assertThat(reopened.size()).isEqualTo(41);
      }
    } finally {
      BenchDirs.delete(dir);
    }
  }
}

package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opening a journal whose newest segment holds a damaged record followed by crafted bytes that
 * look like many long record headers (a forged length and inverted length, as a crafted instant
 * in a record can hold) reads the file a small constant number of times, not once per forged
 * header: the work is counted in bytes read, not measured in time.
 */
class RecoveryScanBudgetTest {

  @TempDir
  Path dir;

  @Test
  @DisplayName("a damaged record followed by 16 000 forged record headers, each naming a length up to the end of a 256 KiB segment, is reported as corruption after reading at most 5 times the file plus 1 MiB, and nothing is deleted")
  void forgedHeadersCannotMakeOpenQuadratic() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(SegmentFormat.header(false, 1, 0, FileJournal.newJournalId(), null));
    byte[] damaged = new byte[100];
    java.util.Arrays.fill(damaged, (byte) 'x');
    out.write(frame(damaged, 12345)); // a bad checksum, not zeros: not a preallocated tail
    int size = 256 * 1024;
    while (out.size() + 16 <= size) {
      int length = size - out.size() - SegmentFormat.FRAME_HEADER; // ends exactly at the end
      out.write(ByteBuffer.allocate(16).putInt(length).putInt(~length).putInt(0x5eed)
          .putInt(0x01010101).array());
    }
    while (out.size() < size) {
      out.write(1);
    }
    byte[] bytes = out.toByteArray();
    Path segment = SegmentFormat.segmentPath(dir, 1);
    Files.write(segment, bytes);
    FaultyFileIo io = new FaultyFileIo();

    Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> {
      try (FileJournal journal = FileJournal.builder(dir).fileIo(io).build()) {
        journal.load();
      }
    });
    assertThat(io.bytesRead.get()).as("bytes read to open a %d-byte segment", bytes.length)
        .isLessThanOrEqualTo(5L * bytes.length + Recovery.SCAN_SLACK + 64 * 1024);
    assertThat(thrown).isInstanceOf(JournalException.class)
        .hasMessageContaining(segment.getFileName().toString())
        .hasMessageContaining("nothing was deleted");
    assertThat(Files.readAllBytes(segment)).as("nothing deleted").isEqualTo(bytes);
  }

  @Test
  @DisplayName("with the forged headers, a complete record after the damaged one is still found and reported, within the same budget")
  void completeRecordAfterForgedHeadersIsFound() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(SegmentFormat.header(false, 1, 0, FileJournal.newJournalId(), null));
    byte[] damaged = new byte[100];
    java.util.Arrays.fill(damaged, (byte) 'x');
    out.write(frame(damaged, 12345));
    for (int i = 0; i < 100; i++) {
      int length = 4096;
      out.write(ByteBuffer.allocate(16).putInt(length).putInt(~length).putInt(0x5eed)
          .putInt(0x01010101).array());
    }
    long complete = out.size();
    byte[] body = new byte[50];
    java.util.Arrays.fill(body, (byte) 'y');
    CRC32C crc = new CRC32C();
    crc.update(body);
    out.write(frame(body, (int) crc.getValue()));
    for (int i = 0; i < 8192; i++) {
      out.write(2);
    }
    byte[] bytes = out.toByteArray();
    Path segment = SegmentFormat.segmentPath(dir, 1);
    Files.write(segment, bytes);
    FaultyFileIo io = new FaultyFileIo();

    assertThatThrownBy(() -> {
      try (FileJournal journal = FileJournal.builder(dir).fileIo(io).build()) {
        journal.load();
      }
    }).isInstanceOf(JournalException.class)
        .hasMessageContaining("complete record at offset " + complete);
    assertThat(Files.readAllBytes(segment)).as("nothing deleted").isEqualTo(bytes);
  }

  private static byte[] frame(byte[] body, int crc) {
    return ByteBuffer.allocate(SegmentFormat.FRAME_HEADER + body.length).putInt(body.length)
        .putInt(~body.length).putInt(crc).put(body).array();
  }
}

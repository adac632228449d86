package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The recovery scan's budget must not turn a legitimately torn tail into a journal that cannot be
 * opened: a crash tore a record (a zero sector inside it) and left the start of the next,
 * unsynced, record, whose payload (client data) holds bytes that look like long record headers.
 */
class RecoveryTornTailBudgetAttackTest {

  @TempDir
  Path dir;

  @Test
  @DisplayName("a torn record followed by a partial record whose payload forges 8 long record headers still opens, cutting the torn tail")
  void tornTailWithForgedHeadersOpens() throws IOException {
    int size = 4 * 1024 * 1024;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(SegmentFormat.header(false, 1, 0, FileJournal.newJournalId(), null));
    long torn = out.size();
    byte[] tornBody = new byte[8192];
    java.util.Arrays.fill(tornBody, (byte) 'x');
    java.util.Arrays.fill(tornBody, 2048, 4096, (byte) 0); // a sector that never reached the disk
    out.write(ByteBuffer.allocate(SegmentFormat.FRAME_HEADER).putInt(tornBody.length)
        .putInt(~tornBody.length).putInt(0x12345678).array());
    out.write(tornBody);
    // The next record's header and the start of its payload; the rest never arrived (zeros).
    int nextLength = 4096;
    out.write(ByteBuffer.allocate(SegmentFormat.FRAME_HEADER).putInt(nextLength)
        .putInt(~nextLength).putInt(0x0badf00d).array());
    for (int i = 0; i < 8; i++) {
      int length = size - out.size() - SegmentFormat.FRAME_HEADER;
      out.write(ByteBuffer.allocate(16).putInt(length).putInt(~length).putInt(0x5eed)
          .putInt(0x01010101).array());
    }
    while (out.size() < size) {
      out.write(0);
    }
    Path segment = SegmentFormat.segmentPath(dir, 1);
    Files.write(segment, out.toByteArray());
    FaultyFileIo io = new FaultyFileIo();

    try (FileJournal journal = FileJournal.builder(dir).fileIo(io).build()) {
      assertThat(journal.load().pending()).isEmpty();
    }
    assertThat(io.bytesRead.get()).as("bytes read to open a %d-byte segment", size)
        .isLessThanOrEqualTo(3L * size + (1 << 20));
  }

  @Test
  @DisplayName("the scan's checksum algebra: crc(B) = crc(A B) xor shift(crc(A), |B|) for random A and B, empty ones too")
  void crcShiftAgreesWithCrc32c() {
    java.util.SplittableRandom random = new java.util.SplittableRandom(7);
    for (int round = 0; round < 200; round++) {
      byte[] a = new byte[random.nextInt(0, 3000)];
      byte[] b = new byte[random.nextInt(0, 3000)];
      for (int i = 0; i < a.length; i++) {
        a[i] = (byte) random.nextInt();
      }
      for (int i = 0; i < b.length; i++) {
        b[i] = (byte) random.nextInt();
      }
      java.util.zip.CRC32C ab = new java.util.zip.CRC32C();
      ab.update(a);
      int crcA = (int) ab.getValue();
      ab.update(b);
      java.util.zip.CRC32C only = new java.util.zip.CRC32C();
      only.update(b);
      assertThat((int) ab.getValue() ^ Recovery.shift(crcA, b.length))
          .isEqualTo((int) only.getValue());
    }
  }

  @Test
  @DisplayName("a damaged record followed by 20 000 valid-looking long headers and then a complete record: the complete record is found reading the file about once")
  void completeRecordFoundInOnePass() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(SegmentFormat.header(false, 1, 0, FileJournal.newJournalId(), null));
    byte[] damaged = new byte[100];
    java.util.Arrays.fill(damaged, (byte) 'x');
    out.write(ByteBuffer.allocate(SegmentFormat.FRAME_HEADER).putInt(damaged.length)
        .putInt(~damaged.length).putInt(12345).array());
    out.write(damaged);
    for (int i = 0; i < 20_000; i++) {
      int length = 200_000;
      out.write(ByteBuffer.allocate(16).putInt(length).putInt(~length).putInt(0x5eed)
          .putInt(0x01010101).array());
    }
    long complete = out.size();
    byte[] body = new byte[50];
    java.util.Arrays.fill(body, (byte) 'y');
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(body);
    out.write(ByteBuffer.allocate(SegmentFormat.FRAME_HEADER).putInt(body.length)
        .putInt(~body.length).putInt((int) crc.getValue()).array());
    out.write(body);
    while (out.size() < 2 * 1024 * 1024) {
      out.write(3);
    }
    byte[] bytes = out.toByteArray();
    Path segment = SegmentFormat.segmentPath(dir, 1);
    Files.write(segment, bytes);
    FaultyFileIo io = new FaultyFileIo();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> {
      try (FileJournal journal = FileJournal.builder(dir).fileIo(io).build()) {
        journal.load();
      }
    }).isInstanceOf(JournalException.class)
        .hasMessageContaining("complete record at offset " + complete);
    assertThat(io.bytesRead.get()).isLessThanOrEqualTo(3L * bytes.length + (1 << 20));
    assertThat(Files.readAllBytes(segment)).as("nothing deleted").isEqualTo(bytes);
  }
}

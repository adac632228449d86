package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the demo records its store and how the CLI reads the record back. */
class DemoStoreTest {
  @TempDir
  Path data;

  @Test
  @DisplayName("a record reads back as written, owner-only, and names its file as the origin")
  void roundTrip() throws Exception {
    new DemoStore("postgres", "jdbc:postgresql://db:5432/x?user=a&password=s3cret", "--storage")
        .record(data);
    DemoStore read = DemoStore.resolve(data, null, null);
    assertThat(read.storage()).isEqualTo("postgres");
    assertThat(read.url()).isEqualTo("jdbc:postgresql://db:5432/x?user=a&password=s3cret");
    assertThat(read.describe()).isEqualTo("store: postgres jdbc:postgresql://db:5432/x?user=a"
        + "&password=*** (recorded by the demo in " + data.resolve(DemoStore.FILE) + ")");
    assertThat(Files.getPosixFilePermissions(data.resolve(DemoStore.FILE)))
        .containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE);
  }

  @Test
  @DisplayName("a temporary file left by a crash mid-record is replaced; the record is whole")
  void staleTemporaryFileFromACrash() throws Exception {
    Files.writeString(data.resolve(DemoStore.FILE + ".tmp"), "storage=po");
    new DemoStore("h2", "jdbc:h2:mem:x", "test").record(data);
    assertThat(DemoStore.resolve(data, null, null).url()).isEqualTo("jdbc:h2:mem:x");
    assertThat(data.resolve(DemoStore.FILE + ".tmp")).doesNotExist();
  }

  @Test
  @DisplayName("a record over 16 KiB is refused with its path, never read")
  void oversizeRecord() throws Exception {
    Files.writeString(data.resolve(DemoStore.FILE), "x".repeat(20_000));
    assertThatThrownBy(() -> DemoStore.resolve(data, null, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(data.resolve(DemoStore.FILE).toString())
        .hasMessageContaining("over 16384 bytes");
  }

  @Test
  @DisplayName("a record that cannot be written fails the demo's start naming the file, and the"
      + " demo it started is closed (the same folder starts again once fixed)")
  void unwritableRecordFailsTheStart() throws Exception {
    Path blocker = data.resolve(DemoStore.FILE);
    Files.createDirectories(blocker.resolve("not-empty"));
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, null,
        Duration.ofSeconds(2));
    assertThatThrownBy(() -> CheckoutApp.start(options))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot record the demo's store in " + blocker);
    Files.delete(blocker.resolve("not-empty"));
    Files.delete(blocker);
    try (CheckoutApp app = CheckoutApp.start(options)) {
      assertThat(DemoStore.resolve(data, null, null).url()).isEqualTo(app.store.url());
    }
  }
}

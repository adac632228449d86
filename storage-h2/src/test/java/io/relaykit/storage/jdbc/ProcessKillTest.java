package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Crash safety of the H2 settings relaykit applies, proven with a real SIGKILL. */
class ProcessKillTest {

  @Test
  @DisplayName("every outbox row a killed (SIGKILL) process reported committed is there on reopen")
  void committedRowsSurviveSigkill(@TempDir Path dir) throws Exception {
    String url = "jdbc:h2:file:" + dir.resolve("outbox").toAbsolutePath();
    String prefix = "kill_";
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    Process child = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"),
        OutboxWriterMain.class.getName(), url, prefix)
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    int reported = 0;
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while (reported < 300 && (line = out.readLine()) != null) {
        if (line.startsWith("committed ")) {
          reported = Integer.parseInt(line.substring("committed ".length()));
        }
      }
      // The child is still writing: it dies between (or inside) its next commits.
      child.destroyForcibly();
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("child exited").isTrue();
    }
    assertThat(reported).as("rows the child reported committed").isEqualTo(300);
    assertThat(child.exitValue()).as("killed by SIGKILL (128 + 9)").isEqualTo(137);

    JdbcStorageConfig config = JdbcStorageConfig.builder().jdbcUrl(url).tablePrefix(prefix)
        .poolSize(2).build();
    try (JdbcStorage storage = JdbcStorage.open(config, InstantSource.system());
        Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT message_id FROM kill_outbox");
        ResultSet rs = ps.executeQuery()) {
      Set<String> ids = new HashSet<>();
      while (rs.next()) {
        ids.add(rs.getString(1));
      }
      for (int i = 0; i < reported; i++) {
        assertThat(ids).as("row m-%d, reported committed before the kill", i).contains("m-" + i);
      }
      assertThat(storage.outboxStore().claim("after-crash", 1_000, Duration.ofSeconds(5),
          Instant.now())).extracting(r -> r.message().id()).containsAll(
              List.of("m-0", "m-1", "m-2", "m-3", "m-4", "m-5", "m-6", "m-7", "m-8", "m-9"));
    }
  }
}

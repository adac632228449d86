package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator CLI against a demo running on PostgreSQL (a child JVM, in a schema of this test's
 * own): without options it reads the store the demo recorded, not the H2 file under the data
 * folder; with {@code --url} it reads that database from anywhere.
 */
class DemoCliPostgresTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String POISON = "POISON";

  @TempDir
  Path data;

  @TempDir
  Path elsewhere;

  private record Run(int code, String out, String err) {
    String firstLine() {
      return out.lines().findFirst().orElse("");
    }
  }

  private static Run cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = DemoCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(code, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("stats and dlq list read the running PostgreSQL demo's two dead letters, found from"
      + " its data folder or given by --url")
  void readsThePostgresDemo() throws Exception {
    try (TestDatabase db = TestDatabase.open("postgres");
        DemoProcess demo = DemoProcess.start(Map.of("RELAYKIT_POSTGRES_URL", db.url),
            "--storage", "postgres", "--data", data.toString(), "--lease", "2",
            "--poison-sku", POISON)) {
      String good = demo.http.order(DemoHttp.newKey(), "book-1", 1).json().get("orderId")
          .asText();
      String poison = demo.http.order(DemoHttp.newKey(), POISON, 1).json().get("orderId")
          .asText();
      demo.http.awaitStatus(good, "SUCCESS", WAIT);
      demo.http.awaitStatus(poison, "FAILED", WAIT);
      List<String> ids = List.of(DeadLetter.idOf(poison + ":sms", "orders.sms", "sms"),
          DeadLetter.idOf(poison + ":coupon", "orders.coupon", "coupon"));

      Run stats = cli("stats", "--data", data.toString());
      assertThat(stats.code()).as(stats.err()).isZero();
      assertThat(stats.firstLine()).isEqualTo("store: postgres " + db.url
          + " (recorded by the demo in " + data.resolve(DemoStore.FILE) + ")");
      assertThat(stats.out()).containsPattern("orders\\s+2\n")
          .containsPattern("dead letters\\s+2\n");

      Run list = cli("dlq", "list", "--data", data.toString());
      assertThat(list.code()).as(list.err()).isZero();
      assertThat(list.firstLine()).startsWith("store: postgres ");
      assertThat(list.out().lines().skip(1)).hasSize(2)
          .anySatisfy(l -> assertThat(l).startsWith(ids.get(0) + "\torders.sms\t"))
          .anySatisfy(l -> assertThat(l).startsWith(ids.get(1) + "\torders.coupon\t"))
          .allSatisfy(l -> assertThat(l).contains("SKU " + POISON + " is poison"));

      Run byUrl = cli("dlq", "list", "--url", db.url, "--data", elsewhere.toString());
      assertThat(byUrl.code()).as(byUrl.err()).isZero();
      assertThat(byUrl.firstLine()).isEqualTo("store: postgres " + db.url + " (--url)");
      assertThat(byUrl.out().lines().skip(1)).hasSize(2);

      Run h2 = cli("dlq", "list", "--data", data.toString(), "--storage", "h2");
      assertThat(h2.firstLine()).as("--storage overrides the record").startsWith("store: h2 ");
      assertThat(h2.out()).contains("no dead letters");
    }
  }
}

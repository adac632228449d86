package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.tck.Await;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The operator CLI against a data folder that a running demo holds open. */
class DemoCliTest {

  @TempDir
  Path data;

  private record Run(int code, String out, String err) {}

  private Run cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = DemoCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(code, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("stats and dlq list work while the demo runs; replay moves a dead letter once; purge")
  void operatesOnARunningDemo() throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, "BAD",
        Duration.ofSeconds(2));
    String dir = data.toString();
    String orderId;
    String smsDeadLetter;
    try (CheckoutApp app = CheckoutApp.start(options)) {
      orderId = app.orders.place("BAD", 1, "k1", Orders.requestHash("BAD", 1))
          .orElseThrow().id();
      smsDeadLetter = DeadLetter.idOf(orderId + ":sms", "orders.sms", "sms");
      app.orders.place("good", 1, "k2", Orders.requestHash("good", 1)).orElseThrow();
      Await.until(Duration.ofSeconds(30), "both messages of the BAD order dead-lettered",
          () -> app.storage.deadLetterStore().count(DeadLetterQuery.all()) == 2);

      Run stats = cli("stats", "--data", dir);
      assertThat(stats.code()).isZero();
      assertThat(stats.out().lines().findFirst().orElseThrow()).as("the store, first")
          .isEqualTo("store: h2 jdbc:h2:file:" + data.toAbsolutePath().resolve("relaykit")
              + ";AUTO_SERVER=TRUE;FILE_LOCK=SOCKET (recorded by the demo in " + data.resolve(DemoStore.FILE)
              + ")");
      assertThat(stats.out()).containsPattern("orders\\s+2\n").containsPattern(
          "dead letters\\s+2\n").contains("verdict");

      Run list = cli("dlq", "list", "--data", dir);
      assertThat(list.code()).isZero();
      assertThat(list.out()).contains(smsDeadLetter + "\torders.sms\tattempts=1")
          .contains(DeadLetter.idOf(orderId + ":coupon", "orders.coupon", "coupon")
              + "\torders.coupon").contains("SKU BAD is poison");
      assertThat(cli("dlq", "list", "--limit", "1", "--data", dir).out().lines())
          .as("the store's line and one dead letter").hasSize(2);
    }

    // Replay with the demo stopped, so no relay re-creates the dead letter between the two.
    Run replay = cli("dlq", "replay", smsDeadLetter, "--data", dir);
    assertThat(replay.code()).isZero();
    assertThat(replay.out()).contains("replayed " + smsDeadLetter + " to orders.sms");
    Run again = cli("dlq", "replay", smsDeadLetter, "--data", dir);
    assertThat(again.code()).isEqualTo(1);
    assertThat(again.err()).contains("no dead letter " + smsDeadLetter);

    Run purge = cli("dlq", "purge", "--data", dir);
    assertThat(purge.code()).isZero();
    assertThat(purge.out()).contains("purged 1 dead letters");
    assertThat(cli("dlq", "list", "--data", dir).out()).contains("no dead letters");
    try (CheckoutApp storage = CheckoutApp.storageOnly(options)) {
      assertThat(storage.storage.deadLetterStore().count(DeadLetterQuery.all())).isZero();
      assertThat(storage.storage.outboxStore().stats(java.time.Instant.now()).unsent())
          .as("the replayed message, back in the outbox").isEqualTo(1);
    }
  }

  @Test
  @DisplayName("bad usage answers exit code 2 with the reason and the usage")
  void badUsage() {
    String dir = data.toString();
    Run unknown = cli("dlq", "explode", "--data", dir);
    assertThat(unknown.code()).isEqualTo(2);
    assertThat(unknown.err()).contains("unknown command 'dlq explode'").contains("usage:");
    Run noId = cli("dlq", "replay", "--data", dir);
    assertThat(noId.code()).isEqualTo(2);
    assertThat(noId.err()).contains("dlq replay needs the dead letter's ID");
    Run badOption = cli("stats", "--port", "1");
    assertThat(badOption.code()).isEqualTo(2);
    assertThat(badOption.err()).contains("--port, --bind and --allow-actions are options of"
        + " relaykit console only");
    assertThat(cli("stats", "--verbose").err()).contains("unknown option --verbose");
    Run badPort = cli("console", "--port", "http", "--data", dir);
    assertThat(badPort.code()).isEqualTo(2);
    assertThat(badPort.err()).contains("--port must be in 0..65535, was 'http'");
    Run badTransport = cli("console", "--transport", "sqs", "--data", dir);
    assertThat(badTransport.code()).isEqualTo(2);
    assertThat(badTransport.err()).contains("--transport must be one of [memory, kafka,"
        + " rabbitmq], was 'sqs'");
    Run badUrl = cli("stats", "--url", "jdbc:mysql://127.0.0.1/x?password=secret");
    assertThat(badUrl.code()).isEqualTo(2);
    assertThat(badUrl.err()).contains("--url must be a jdbc:h2: or jdbc:postgresql: URL")
        .contains("password=***").doesNotContain("secret");
    Run mismatch = cli("stats", "--storage", "postgres", "--url", "jdbc:h2:mem:x");
    assertThat(mismatch.code()).isEqualTo(2);
    assertThat(mismatch.err()).contains("--storage postgres does not match --url jdbc:h2:mem:x");
    Run badStorage = cli("stats", "--storage", "mongo");
    assertThat(badStorage.code()).isEqualTo(2);
    assertThat(badStorage.err()).contains("--storage must be one of [h2, postgres, redis], was"
        + " 'mongo'");
    assertThat(cli("stats", "--url").err()).contains("--url needs a value");
    Run badLimit = cli("dlq", "list", "--limit", "0", "--data", dir);
    assertThat(badLimit.code()).isEqualTo(2);
    assertThat(badLimit.err()).contains("--limit must be a positive whole number, was '0'");
    assertThat(cli().err()).contains("unknown command ''");
  }

  @Test
  @DisplayName("without a recorded store the CLI reads the H2 file under --data and says so")
  void defaultStore() {
    Run stats = cli("stats", "--data", data.toString());
    assertThat(stats.code()).as(stats.err()).isZero();
    assertThat(stats.out().lines().findFirst().orElseThrow()).startsWith("store: h2 jdbc:h2:file:")
        .endsWith("(default: no demo recorded a store in " + data + ")");
    assertThat(stats.out()).containsPattern("dead letters\\s+0\n");
  }

  @Test
  @DisplayName("a recorded file that is not a store is refused with its path, never guessed")
  void unreadableRecord() throws Exception {
    java.nio.file.Files.writeString(data.resolve(DemoStore.FILE), "storage=oracle\nurl=x\n");
    Run stats = cli("stats", "--data", data.toString());
    assertThat(stats.code()).isEqualTo(2);
    assertThat(stats.err()).contains(data.resolve(DemoStore.FILE).toString())
        .contains("does not name a storage and a JDBC URL");
    assertThat(cli("stats", "--data", data.toString(), "--storage", "h2").code())
        .as("--storage overrides the record").isZero();
  }

  @Test
  @DisplayName("relaykit console warns when --bind reaches beyond loopback,"
      + " and is silent on loopback")
  void bindWarning() throws Exception {
    assertThat(DemoCli.exposureWarning(java.net.InetAddress.getLoopbackAddress())).isNull();
    assertThat(DemoCli.exposureWarning(java.net.InetAddress.getByName("::1"))).isNull();
    assertThat(DemoCli.exposureWarning(java.net.InetAddress.getByName("0.0.0.0")))
        .contains("every interface").contains("unencrypted");
    assertThat(DemoCli.exposureWarning(java.net.InetAddress.getByName("192.0.2.7")))
        .contains("192.0.2.7").contains("unencrypted");
  }
}

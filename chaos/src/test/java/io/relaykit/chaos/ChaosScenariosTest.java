package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The CI scenarios of {@code ./relaykit chaos}, short versions, each a real run: demo JVMs as
 * child processes, real kill -9s, real partitions through the fault proxy, against the machine's
 * PostgreSQL, Redis and RabbitMQ (never stopped: the faults are on the proxy) and a Kafka broker
 * the run starts itself (LocalKafkaBroker) and kill -9s. Each asserts the
 * verdict and that the faults really happened (their windows, and what the run did to the
 * system: requests cut short, a backlog that built up), and keeps its report under
 * {@code target/chaos-scenarios/NAME}. About 4 minutes in all on 2 cores.
 */
class ChaosScenariosTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String POSTGRES = postgresUrl();

  private static String postgresUrl() {
    String env = System.getenv("RELAYKIT_POSTGRES_URL");
    return env == null || env.isBlank() ? "jdbc:postgresql://127.0.0.1:5432/test?user=postgres"
        : env;
  }

  private record Run(ChaosRun.Result result, String out, JsonNode report) {
    Checker.Verdict verdict() {
      return result.verdict();
    }

    List<JsonNode> faults() {
      List<JsonNode> out = new ArrayList<>();
      report.get("faults").forEach(out::add);
      return out;
    }
  }

  private static Run run(String name, String... args) throws Exception {
    Path dir = Path.of("target", "chaos-scenarios", name);
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--report", dir.toString()));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream print = new PrintStream(out, true, StandardCharsets.UTF_8);
    ChaosRun.Result r = ChaosRun.run(all.toArray(String[]::new), print, print);
    String text = out.toString(StandardCharsets.UTF_8);
    System.out.println(text);
    assertThat(r.verdict()).as("the run could not be made:\n%s", text).isNotNull();
    JsonNode report = JSON.readTree(dir.resolve("report.json").toFile());
    assertThat(dir.resolve("report.html")).exists();
    assertThat(Files.size(dir.resolve("client-log.jsonl"))).isPositive();
    return new Run(r, text, report);
  }

  /** Nothing lost, nothing twice, no violation; every accepted order ended. */
  private static void assertClean(Run run, int orders) {
    Checker.Verdict v = run.verdict();
    assertThat(v.passed()).as("verdict:\n%s", run.out()).isTrue();
    assertThat(run.result().exitCode()).isZero();
    assertThat(v.acceptedKeys()).as("accepted").isEqualTo(orders);
    assertThat(v.terminal()).isEqualTo(v.ordersInDatabase());
    assertThat(v.ordersInDatabase()).isEqualTo(orders);
    assertThat(v.failed()).as("poison orders end FAILED").isPositive();
    assertThat(v.failedNotPoison()).as("good orders that failed").isZero();
    assertThat(v.outboxUnsent()).isZero();
    assertThat(run.report().get("settled").asBoolean()).isTrue();
  }

  @Test
  @DisplayName("H2: three kill -9s during 1000 orders")
  void h2ThreeKills() throws Exception {
    Run run = run("h2-kills", "--orders", "1000", "--rate", "80", "--faults", "kill",
        "--kills", "3", "--seed", "11");
    assertClean(run, 1000);
    assertThat(run.faults()).hasSize(3).allSatisfy(f -> {
      assertThat(f.get("fault").asText()).isEqualTo("kill");
      assertThat(f.get("detail").asText()).startsWith("kill -9 pid");
    });
    // The kills cut requests short (no answer): the client resent them with the same key.
    List<JsonNode> log = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of("target", "chaos-scenarios", "h2-kills",
        "client-log.jsonl"))) {
      log.add(JSON.readTree(line));
    }
    assertThat(log).hasSize((int) run.verdict().requests());
    assertThat(log).filteredOn(r -> r.get("status").asInt() == -1).isNotEmpty();
    assertThat(log).filteredOn(r -> r.get("kind").asText().equals("retry")
        && r.get("status").asInt() == 202).isNotEmpty();
    assertThat(run.verdict().recoveries()).hasSize(3)
        .allSatisfy(r -> assertThat(r.recoveryMs()).isNotNull());
  }

  @Test
  @DisplayName("PostgreSQL: 3 instances, 3 kill -9s and a 5 s database blackhole, 2000 orders")
  void postgresInstancesKillsAndPartition() throws Exception {
    Run run = run("postgres-kills-partition", "--storage", "postgres", "--postgres-url",
        POSTGRES, "--instances", "3", "--orders", "2000", "--rate", "100", "--faults",
        "kill,partition", "--kills", "3", "--partitions", "1", "--partition-seconds", "5",
        "--partition-modes", "blackhole", "--seed", "7");
    assertClean(run, 2000);
    assertThat(run.faults()).hasSize(4);
    JsonNode partition = run.faults().stream()
        .filter(f -> f.get("fault").asText().equals("partition")).findFirst().orElseThrow();
    assertThat(partition.get("target").asText()).isEqualTo("db");
    assertThat(partition.get("endMs").asLong() - partition.get("startMs").asLong())
        .isBetween(5_000L, 8_000L);
    // Kills hit more than one instance with this seed.
    assertThat(run.faults().stream().filter(f -> f.get("fault").asText().equals("kill"))
        .map(f -> f.get("target").asText()).distinct().count()).isGreaterThan(1);
  }

  @Test
  @DisplayName("RabbitMQ: every connection cut twice under load")
  void rabbitMqConnectionCut() throws Exception {
    Run run = run("rabbitmq-cut", "--transport", "rabbitmq", "--orders", "600", "--rate",
        "60", "--faults", "partition", "--partitions", "2", "--partition-modes", "cut",
        "--seed", "3");
    assertClean(run, 600);
    assertThat(run.faults()).hasSize(2).allSatisfy(f ->
        assertThat(f.get("detail").asText()).startsWith("cut "));
    assertThat(run.faults().get(0).get("detail").asText()).doesNotStartWith("cut 0 ");
  }

  @Test
  @DisplayName("Kafka: kill -9 of the run's own broker under load, and its restart")
  void kafkaBrokerKill() throws Exception {
    Run run = run("kafka-broker-kill", "--transport", "kafka", "--orders", "800", "--rate", "50",
        "--faults", "broker-kill", "--seed", "4");
    assertClean(run, 800);
    assertThat(run.faults()).singleElement().satisfies(f -> {
      assertThat(f.get("fault").asText()).isEqualTo("broker-kill");
      assertThat(f.get("detail").asText()).startsWith("kill -9 broker pid");
    });
    // The broker was down long enough for the outbox to back up behind it.
    assertThat(run.verdict().maxBacklog()).isGreaterThan(100);
  }

  @Test
  @DisplayName("Redis fast tier: a 5 s Redis blackhole under load")
  void redisBlackhole() throws Exception {
    Run run = run("redis-blackhole", "--idempotency", "redis", "--orders", "600", "--rate",
        "60", "--faults", "partition", "--partitions", "1", "--partition-modes", "blackhole",
        "--partition-seconds", "5", "--seed", "5");
    assertClean(run, 600);
    assertThat(run.faults()).singleElement().satisfies(f -> {
      assertThat(f.get("target").asText()).isEqualTo("redis");
      assertThat(f.get("detail").asText()).startsWith("blackhole redis");
    });
  }
}

package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line: defaults, bad input exits 2 naming the option or fault, H2 refuses several
 * instances with the reason, an unreachable service exits 3 naming it and how to start it, and the
 * same seed plans the same schedule.
 */
class ChaosOptionsTest {
  @TempDir
  Path report;

  private record Ran(int code, String out, String err) {}

  private static Ran run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    ChaosRun.Result r = ChaosRun.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Ran(r.exitCode(), out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("defaults: H2, memory, db idempotency, one instance, 1000 orders, kill faults")
  void defaults() {
    ChaosOptions o = ChaosOptions.parse();
    assertThat(o.storage()).isEqualTo("h2");
    assertThat(o.transport()).isEqualTo("memory");
    assertThat(o.idempotency()).isEqualTo("db");
    assertThat(o.instances()).isEqualTo(1);
    assertThat(o.orders()).isEqualTo(1000);
    assertThat(o.faults()).containsExactly("kill");
    assertThat(ChaosOptions.parse("--faults", "none").faults()).isEmpty();
    assertThat(ChaosOptions.parse("--rate", "20", "--duration", "30").orders()).isEqualTo(600);
  }

  @Test
  @DisplayName("an unknown option or fault exits 2 and names it")
  void badInputExitsTwo() {
    Ran unknown = run("--ordres", "5");
    assertThat(unknown.code()).isEqualTo(2);
    assertThat(unknown.err()).contains("unknown option --ordres").contains("usage:");
    Ran fault = run("--faults", "kill,meteor");
    assertThat(fault.code()).isEqualTo(2);
    assertThat(fault.err()).contains("unknown fault 'meteor'");
    Ran value = run("--rate", "fast");
    assertThat(value.code()).isEqualTo(2);
    assertThat(value.err()).contains("--rate must be a number, was 'fast'");
    assertThat(run("--orders").err()).contains("--orders needs a value");
    assertThat(run("--help").code()).isZero();
  }

  @Test
  @DisplayName("H2 runs one instance and says why; partitions need a proxied service")
  void impossibleCombinations() {
    assertThatThrownBy(() -> ChaosOptions.parse("--instances", "3"))
        .hasMessageContaining("needs --storage postgres").hasMessageContaining("AUTO_SERVER");
    Ran partition = run("--faults", "partition");
    assertThat(partition.code()).isEqualTo(2);
    assertThat(partition.err()).contains("needs a service behind a proxy");
    assertThat(run("--storage", "postgres", "--idempotency", "redis").err())
        .contains("H2 only");
  }

  @Test
  @DisplayName("broker-kill without the run's own Kafka broker is refused with the reason")
  void brokerKillNeedsKafka() {
    Ran r = run("--faults", "broker-kill");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("fault broker-kill").contains("--transport kafka");
  }

  @Test
  @DisplayName("an unreachable PostgreSQL exits 3 with one line naming it and how to start it")
  void unreachableService() {
    Ran r = run("--storage", "postgres", "--postgres-url",
        "jdbc:postgresql://127.0.0.1:1/test?user=postgres&connectTimeout=2", "--report",
        report.toString());
    assertThat(r.code()).isEqualTo(3);
    assertThat(r.err()).contains("PostgreSQL is not reachable at 127.0.0.1:1")
        .contains("ensure_postgres");
    assertThat(r.err().strip().lines()).hasSize(1);
  }

  @Test
  @DisplayName("the same seed plans the same schedule; another seed another one")
  void seededSchedule() {
    ChaosOptions a = ChaosOptions.parse("--storage", "postgres", "--instances", "3",
        "--faults", "kill,partition", "--kills", "5", "--partitions", "2", "--seed", "42");
    List<FaultSchedule.Event> one = FaultSchedule.plan(a, 60_000);
    assertThat(FaultSchedule.plan(a, 60_000)).isEqualTo(one);
    assertThat(one).hasSize(7);
    assertThat(one).filteredOn(e -> e.fault().equals("kill")).hasSize(5)
        .allSatisfy(e -> assertThat(Integer.parseInt(e.target())).isBetween(0, 2));
    assertThat(one).filteredOn(e -> e.fault().equals("partition")).hasSize(2)
        .allSatisfy(e -> assertThat(e.target()).isEqualTo("db"));
    assertThat(one).allSatisfy(e -> assertThat(e.atMs()).isBetween(6_000L, 51_000L));
    assertThat(one).isSortedAccordingTo(java.util.Comparator.comparingLong(
        FaultSchedule.Event::atMs));
    ChaosOptions b = ChaosOptions.parse("--storage", "postgres", "--instances", "3",
        "--faults", "kill,partition", "--kills", "5", "--partitions", "2", "--seed", "43");
    assertThat(FaultSchedule.plan(b, 60_000)).isNotEqualTo(one);
  }

  /** What makes a run: everything but where it reports and which PostgreSQL URL it was given. */
  private static void assertSameRun(ChaosOptions replayed, ChaosOptions o) {
    assertThat(replayed.storage()).isEqualTo(o.storage());
    assertThat(replayed.transport()).isEqualTo(o.transport());
    assertThat(replayed.idempotency()).isEqualTo(o.idempotency());
    assertThat(replayed.instances()).isEqualTo(o.instances());
    assertThat(replayed.orders()).isEqualTo(o.orders());
    assertThat(replayed.rate()).isEqualTo(o.rate());
    assertThat(replayed.failRate()).isEqualTo(o.failRate());
    assertThat(replayed.faults()).isEqualTo(o.faults());
    assertThat(replayed.seed()).isEqualTo(o.seed());
    assertThat(replayed.settle()).isEqualTo(o.settle());
    assertThat(replayed.recoveryBound()).isEqualTo(o.recoveryBound());
    assertThat(replayed.repeatShare()).isEqualTo(o.repeatShare());
    assertThat(replayed.poisonShare()).isEqualTo(o.poisonShare());
    // The fault options act through the schedule: the same events at the same times.
    long loadMs = (long) (o.orders() * 1000 / o.rate());
    assertThat(FaultSchedule.plan(replayed, loadMs)).isEqualTo(FaultSchedule.plan(o, loadMs));
    if (o.faults().contains("partition")) {
      assertThat(replayed.effectiveTargets()).isEqualTo(o.effectiveTargets());
      assertThat(replayed.partitionModes()).isEqualTo(o.partitionModes());
      assertThat(replayed.partitionLength()).isEqualTo(o.partitionLength());
    }
    if (o.faults().contains("clock")) {
      assertThat(replayed.partitionLength()).isEqualTo(o.partitionLength());
    }
  }

  @Test
  @DisplayName("the replay command lists only the options that differ from their default and"
      + " that the run uses")
  void replayListsWhatMatters() {
    ChaosOptions readme = ChaosOptions.parse("--transport", "rabbitmq", "--orders", "5000",
        "--rate", "80", "--faults", "kill,partition", "--kills", "5", "--partitions", "6",
        "--partition-modes", "cut,refuse,blackhole", "--partition-seconds", "5", "--seed", "2",
        "--report", report.toString());
    assertThat(ChaosRun.replayCommand(readme)).isEqualTo("./relaykit chaos --transport rabbitmq"
        + " --orders 5000 --rate 80 --faults kill,partition --kills 5 --partitions 6"
        + " --partition-modes cut,refuse,blackhole --seed 2");
    assertThat(ChaosRun.replayCommand(ChaosOptions.parse("--report", report.toString())))
        .isEqualTo("./relaykit chaos");
    // Partition options without the partition fault, kill counts without kills: left out.
    assertThat(ChaosOptions.parse("--faults", "none", "--kills", "9", "--partitions", "4",
        "--partition-modes", "cut", "--partition-targets", "rabbitmq", "--broker-kills", "2",
        "--partition-seconds", "9").replayArgs()).containsExactly("--faults", "none");
    // Options the old command line left out are there when they differ.
    assertThat(ChaosOptions.parse("--settle", "30", "--repeat-share", "0.25", "--poison-share",
        "0", "--fail-rate", "0", "--rate", "12.5").replayArgs()).containsExactly("--rate",
        "12.5", "--fail-rate", "0", "--settle", "30", "--repeat-share", "0.25",
        "--poison-share", "0");
  }

  @Test
  @DisplayName("the replay command parses back to the same run")
  void replayRoundTrips() {
    List<String[]> runs = List.of(
        new String[] {"--transport", "rabbitmq", "--orders", "5000", "--rate", "80", "--faults",
            "kill,partition", "--kills", "5", "--partitions", "6", "--partition-modes",
            "cut,refuse,blackhole", "--partition-seconds", "5", "--seed", "2"},
        new String[] {},
        new String[] {"--storage", "postgres", "--instances", "3", "--transport", "kafka",
            "--faults", "partition,broker-kill,clock,kill", "--broker-kills", "2",
            "--partition-modes", "latency,cut", "--partition-targets", "kafka",
            "--partition-seconds", "7", "--recovery-bound", "20", "--duration", "33",
            "--rate", "30", "--fail-rate", "0.1"},
        new String[] {"--idempotency", "redis", "--faults", "clock", "--partition-seconds", "3",
            "--seed", "-5", "--poison-share", "0.2", "--repeat-share", "0", "--settle", "10"},
        new String[] {"--faults", "none", "--orders", "7", "--rate", "0.5"});
    for (String[] args : runs) {
      List<String> all = new java.util.ArrayList<>(List.of(args));
      all.addAll(List.of("--report", report.toString()));
      ChaosOptions o = ChaosOptions.parse(all.toArray(String[]::new));
      String command = ChaosRun.replayCommand(o);
      assertThat(command).startsWith("./relaykit chaos");
      String[] words = command.substring("./relaykit chaos".length()).trim().split(" ");
      ChaosOptions replayed = ChaosOptions.parse(command.equals("./relaykit chaos")
          ? new String[0] : words);
      assertSameRun(replayed, o);
      assertThat(replayed.replayArgs()).as(command).isEqualTo(o.replayArgs());
    }
  }
}

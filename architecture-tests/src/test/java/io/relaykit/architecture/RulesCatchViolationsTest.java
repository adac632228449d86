package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Every rule of {@link RelayKitRules}, run over the classes in {@code
 * io.relaykit.architecture.fixture}: each rule reports exactly the fixtures built to break it, and
 * none of those built to keep it. Without this, a rule that matched nothing would pass forever.
 */
class RulesCatchViolationsTest {

  private static final String FIXTURE = "io.relaykit.architecture.fixture";
  private static final RelayKitRules RULES = new RelayKitRules(FIXTURE);
  private static JavaClasses fixtures;

  @BeforeAll
  static void importFixtures() {
    fixtures = new ClassFileImporter().importPackages(FIXTURE);
  }

  /** The violation lines of {@code rule} over the fixtures; asserts there is at least one. */
  private static List<String> violations(ArchRule rule) {
    EvaluationResult result = rule.evaluate(fixtures);
    assertThat(result.hasViolation()).as("%s reports a violation", rule.getDescription()).isTrue();
    return result.getFailureReport().getDetails();
  }

  private static String fixture(String simpleName) {
    return FIXTURE + "." + simpleName;
  }

  @Test
  @DisplayName("the core rule reports a javax type and an adapter used by the core, not JDK crypto")
  void coreDependsOnJavaOnly() {
    List<String> v = violations(RULES.coreDependsOnJavaOnly());

    assertThat(v).anyMatch(l -> l.contains(fixture("retry.CoreBadDeps"))
        && l.contains("javax.sql.DataSource"));
    assertThat(v).anyMatch(l -> l.contains(fixture("retry.CoreBadDeps"))
        && l.contains(fixture("storage.jdbc.H2Store")));
    assertThat(v).as("only CoreBadDeps breaks it")
        .allMatch(l -> l.contains(fixture("retry.CoreBadDeps")))
        .noneMatch(l -> l.contains("javax.crypto"));
  }

  @Test
  @DisplayName("the guice rule reports Guava and lets Guice and the core through")
  void guiceDependsOnCoreAndGuiceOnly() {
    List<String> v = violations(RULES.guiceDependsOnCoreAndGuiceOnly());

    assertThat(v).anyMatch(l -> l.contains("com.google.common.collect.ImmutableList"));
    assertThat(v).allMatch(l -> l.contains(fixture("guice.GuiceUsesGuavaAndCoreInternals")))
        .noneMatch(l -> l.contains("CleanModule"));
  }

  @Test
  @DisplayName("the adapter rule reports storage-h2 using transport-kafka, and nothing else")
  void adaptersAreIndependent() {
    List<String> v = violations(RULES.adaptersAreIndependent());

    assertThat(String.join("\n", v))
        .contains("storage-h2").contains("transport-kafka")
        .contains(fixture("storage.jdbc.H2Store")).contains(fixture("transport.kafka.KafkaThing"))
        .doesNotContain("Demo").doesNotContain("CleanModule");
  }

  @Test
  @DisplayName("the adapter-guice rule reports a plain adapter class using Guice, not its module")
  void adaptersUseGuiceOnlyInTheirModule() {
    List<String> v = violations(RULES.adaptersUseGuiceOnlyInTheirModule());

    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2PlainUsesGuice"))
        && l.contains("com.google.inject.Injector"));
    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2PlainUsesGuice"))
        && l.contains(fixture("guice.CleanModule")));
    assertThat(v).allMatch(l -> l.contains(fixture("storage.jdbc.H2PlainUsesGuice") + " is no"));
  }

  @Test
  @DisplayName("the application rule reports an adapter using examples, not examples using bench")
  void nothingDependsOnApplications() {
    List<String> v = violations(RULES.nothingDependsOnApplications());

    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2Store"))
        && l.contains(fixture("examples.Demo")));
    assertThat(v).noneMatch(l -> l.startsWith("Field <" + fixture("examples.")))
        .noneMatch(l -> l.startsWith("Field <" + fixture("bench.")))
        .allMatch(l -> l.contains(fixture("storage.jdbc.H2Store")));
  }

  @Test
  @DisplayName("the integration rule reports an adapter using the starter, not examples using it")
  void onlyApplicationsDependOnIntegrations() {
    List<String> v = violations(RULES.onlyApplicationsDependOnIntegrations());

    assertThat(v).anyMatch(l -> l.contains(fixture("transport.kafka.KafkaUsesStarter"))
        && l.contains(fixture("spring.boot.StarterThing")));
    assertThat(v).allMatch(l -> l.contains(fixture("transport.kafka.KafkaUsesStarter")));
  }

  @Test
  @DisplayName("the test-library rule reports an adapter using JUnit and the TCK, not the TCK itself")
  void testLibrariesStayOutOfMainCode() {
    List<String> v = violations(RULES.testLibrariesStayOutOfMainCode());

    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2UsesTestCode"))
        && l.contains("org.junit.jupiter.api.Assertions"));
    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2UsesTestCode"))
        && l.contains(fixture("tck.KitFixture")));
    assertThat(v).allMatch(l -> l.contains(fixture("storage.jdbc.H2UsesTestCode")));
    assertThat(v).as("test support for applications may use JUnit and the TCK")
        .noneMatch(l -> l.contains(fixture("test.HarnessFixture")));
  }

  @Test
  @DisplayName("the test-support rule reports an adapter using relaykit-test, not relaykit-test")
  void onlyApplicationsDependOnTestSupport() {
    List<String> v = violations(RULES.onlyApplicationsDependOnTestSupport());

    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2UsesTestSupport"))
        && l.contains(fixture("test.HarnessFixture")));
    assertThat(v).allMatch(l -> l.contains(fixture("storage.jdbc.H2UsesTestSupport")));
  }

  @Test
  @DisplayName("the internal rule reports other modules' internals and examples using the shared one")
  void internalPackagesStayInTheirModule() {
    List<String> v = violations(RULES.internalPackagesStayInTheirModule());

    assertThat(v).anyMatch(l -> l.contains(fixture("examples.Demo")
        + " (examples) uses " + fixture("internal.CoreChecks") + ", internal to queue-core"));
    assertThat(v).as("relaykit modules may use the shared io.relaykit.internal")
        .noneMatch(l -> l.contains(fixture("guice.GuiceUsesGuavaAndCoreInternals") + " ("));
    assertThat(v).anyMatch(l -> l.contains(fixture("storage.jdbc.H2Store")
        + " (storage-h2) uses " + fixture("transport.kafka.internal.KafkaWire")
        + ", internal to transport-kafka"));
    assertThat(v).noneMatch(l -> l.contains("H2Sql"))
        .noneMatch(l -> l.contains(fixture("transport.kafka.KafkaThing") + " ("));
  }

  @Test
  @DisplayName("the cycle rule reports the cycle between message and queue")
  void noCycles() {
    String report = String.join("\n", violations(RULES.noCyclesBetweenTopLevelPackages()));

    assertThat(report).contains("Cycle detected")
        .contains(fixture("message.CycleA")).contains(fixture("queue.CycleB"));
  }

  @Test
  @DisplayName("the module-table rule reports a class in a package no module owns")
  void everyClassBelongsToAModule() {
    List<String> v = violations(RULES.everyClassBelongsToAModule());

    assertThat(v).singleElement().asString()
        .contains(fixture("mystery.Stray") + " is in no module's package");
  }

  @Test
  @DisplayName("the fixtures that keep the rules are imported too, so 'allowed' is really checked")
  void fixturesImported() {
    assertThat(fixtures.contain(fixture("examples.Demo"))).isTrue();
    assertThat(fixtures.contain(fixture("storage.jdbc.internal.H2Sql"))).isTrue();
    assertThat(fixtures.contain(fixture("guice.CleanModule"))).isTrue();
    assertThat(fixtures.contain(fixture("storage.jdbc.H2GuiceModule"))).isTrue();
    assertThat(fixtures.contain(fixture("storage.jdbc.H2GuiceModule$Nested"))).isTrue();
    assertThat(fixtures.contain(fixture("retry.CleanBackoff"))).isTrue();
    assertThat(fixtures.contain(fixture("spring.boot.StarterThing"))).isTrue();
  }
}

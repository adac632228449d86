package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The layering rules over the main classes of every relaykit module on this module's test class
 * path (each module is a test-scoped dependency in the pom). Test classes, this module's fixtures
 * included, are not imported.
 */
class LayeringTest {

  private static final RelayKitRules RULES = new RelayKitRules("io.relaykit");
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    classes = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("io.relaykit");
  }

  @Test
  @DisplayName("the import holds the main classes of every module on the class path, and no test")
  void importIsComplete() {
    assertThat(classes.contain("io.relaykit.retry.Backoff")).as("queue-core").isTrue();
    assertThat(classes.contain("io.relaykit.tck.FakeClock")).as("queue-tck").isTrue();
    assertThat(classes.contain("io.relaykit.guice.RelayKitModule")).as("queue-guice").isTrue();
    assertThat(classes.contain("io.relaykit.poller.StatusPoller")).as("frontend-poller").isTrue();
    assertThat(classes.contain("io.relaykit.opentelemetry.OpenTelemetryPropagation"))
        .as("tracing-opentelemetry").isTrue();
    assertThat(classes.contain("io.relaykit.spring.boot.RelaykitAutoConfiguration"))
        .as("spring-boot-starter").isTrue();
    assertThat(classes.stream().map(JavaClass::getPackageName))
        .as("tests and fixtures stay out")
        .noneMatch(p -> p.startsWith("io.relaykit.architecture"));
  }

  @Test
  @DisplayName("queue-core depends on java.* only")
  void coreDependsOnJavaOnly() {
    RULES.coreDependsOnJavaOnly().check(classes);
  }

  @Test
  @DisplayName("an adapter depends on queue-core, and on queue-guice only for its optional module")
  void adaptersUseGuiceOnlyInTheirModule() {
    RULES.adaptersUseGuiceOnlyInTheirModule().check(classes);
  }

  @Test
  @DisplayName("queue-guice depends on queue-core, Guice and jakarta.inject only")
  void guiceDependsOnCoreAndGuiceOnly() {
    RULES.guiceDependsOnCoreAndGuiceOnly().check(classes);
  }

  @Test
  @DisplayName("an adapter never depends on another adapter")
  void adaptersAreIndependent() {
    RULES.adaptersAreIndependent().check(classes);
  }

  @Test
  @DisplayName("nothing but examples and benchmarks depends on them")
  void nothingDependsOnApplications() {
    RULES.nothingDependsOnApplications().check(classes);
  }

  @Test
  @DisplayName("only applications depend on spring-boot-starter")
  void onlyApplicationsDependOnIntegrations() {
    RULES.onlyApplicationsDependOnIntegrations().check(classes);
  }

  @Test
  @DisplayName("only applications depend on relaykit-test")
  void onlyApplicationsDependOnTestSupport() {
    RULES.onlyApplicationsDependOnTestSupport().check(classes);
  }

  @Test
  @DisplayName("main code outside queue-tck and relaykit-test uses no JUnit, AssertJ or TCK class")
  void testLibrariesStayOutOfMainCode() {
    RULES.testLibrariesStayOutOfMainCode().check(classes);
  }

  @Test
  @DisplayName("internal packages are used only inside their own module")
  void internalPackagesStayInTheirModule() {
    RULES.internalPackagesStayInTheirModule().check(classes);
  }

  @Test
  @DisplayName("top-level packages are free of cycles")
  void noCycles() {
    RULES.noCyclesBetweenTopLevelPackages().check(classes);
  }

  @Test
  @DisplayName("every class lives in a package a known module owns")
  void everyClassBelongsToAModule() {
    RULES.everyClassBelongsToAModule().check(classes);
  }
}

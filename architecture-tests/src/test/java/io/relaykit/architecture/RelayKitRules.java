package io.relaykit.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import com.tngtech.archunit.library.dependencies.SliceRule;
import io.relaykit.architecture.RelayKitModules.Module;
import io.relaykit.architecture.RelayKitModules.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The layering of DESIGN.md as ArchUnit rules, written over packages relative to a base so that
 * the same rules run over the real {@code io.relaykit} classes and over fixtures that break them.
 * Rules over roles with no classes yet (adapters that have not landed) pass on an empty selection;
 * the rule over the core does not, so an import that found nothing cannot pass by accident.
 */
final class RelayKitRules {

  private final RelayKitModules modules;
  private final String base;

  RelayKitRules(String base) {
    this.modules = new RelayKitModules(base);
    this.base = base;
  }

  /**
   * The one non-{@code java.*} package queue-core may use: the JDK's crypto API, which lives in the
   * {@code java.base} module like {@code java.*} and is what DESIGN.md's "journals can encrypt
   * payloads at rest (AES-GCM, JDK crypto)" needs ({@code io.relaykit.queue.FileJournal}). Every
   * other {@code javax.*} ({@code javax.sql}, {@code javax.annotation}, ...) stays forbidden.
   */
  static final String CORE_JDK_CRYPTO = "javax.crypto..";

  /**
   * queue-core uses the JDK's {@code java.*} packages, the JDK crypto API and itself: no other
   * javax, no jdk, no sun, no library.
   */
  ArchRule coreDependsOnJavaOnly() {
    String[] core = modules.patterns(Role.CORE);
    String[] allowed = Stream.concat(Stream.of("java..", CORE_JDK_CRYPTO), Stream.of(core))
        .toArray(String[]::new);
    return classes().that().resideInAnyPackage(core)
        .should().onlyDependOnClassesThat().resideInAnyPackage(allowed)
        .as("queue-core depends on java.* (and the JDK's javax.crypto) only");
  }

  /** queue-guice uses the core, Guice and jakarta.inject, nothing else (Guava included). */
  ArchRule guiceDependsOnCoreAndGuiceOnly() {
    String[] allowed = Stream.concat(
        Stream.of("java..", "com.google.inject..", "jakarta.inject..", base + ".guice.."),
        Stream.of(modules.patterns(Role.CORE))).toArray(String[]::new);
    return classes().that().resideInAPackage(base + ".guice..")
        .should().onlyDependOnClassesThat().resideInAnyPackage(allowed)
        .as("queue-guice depends on queue-core, Guice and jakarta.inject only");
  }

  /** No adapter (storage, transport, poller) depends on another adapter. */
  ArchRule adaptersAreIndependent() {
    return slices().assignedFrom(new SliceAssignment() {
      @Override
      public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
        return modules.moduleOf(javaClass.getPackageName())
            .filter(m -> m.role() == Role.ADAPTER)
            .map(m -> SliceIdentifier.of(m.name()))
            .orElse(SliceIdentifier.ignore());
      }

      @Override
      public String getDescription() {
        return "adapter modules";
      }
    }).should().notDependOnEachOther()
        .allowEmptyShould(true)
        .as("an adapter never depends on another adapter");
  }

  /**
   * Whether a class is an adapter's optional Guice part: it, or the top-level class it is nested
   * in (anonymous modules, lambdas' enclosing classes), is assignable to Guice's
   * {@code com.google.inject.Module} or to queue-guice's {@code BackendModuleProvider}. Only those
   * classes may touch Guice, which is why an adapter's pom can mark queue-guice and Guice
   * {@code optional}: an application without Guice never loads them.
   */
  boolean isGuicePart(JavaClass c) {
    JavaClass top = c;
    while (top.getEnclosingClass().isPresent()) {
      top = top.getEnclosingClass().get();
    }
    for (JavaClass k : List.of(c, top)) {
      Stream<JavaClass> supertypes = Stream.concat(Stream.concat(Stream.of(k),
          k.getAllRawSuperclasses().stream()), k.getAllRawInterfaces().stream());
      if (supertypes.map(JavaClass::getName).anyMatch(guiceModuleTypes(base)::contains)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The type names that make a class a Guice part. Guice's own base classes are named as well as
   * {@code Module}: the importer does not always resolve library supertypes, so a class extending
   * {@code AbstractModule} might otherwise show no {@code Module} interface.
   */
  private static List<String> guiceModuleTypes(String base) {
    return List.of("com.google.inject.Module", "com.google.inject.AbstractModule",
        "com.google.inject.PrivateModule", base + ".guice.BackendModuleProvider");
  }

  /**
   * An adapter depends on queue-core, and on queue-guice (and Guice) only in its optional module:
   * a class of an adapter that is not a Guice part ({@link #isGuicePart}) uses no
   * {@code com.google.inject..}, {@code jakarta.inject..} or queue-guice class.
   */
  ArchRule adaptersUseGuiceOnlyInTheirModule() {
    String[] adapters = modules.patterns(Role.ADAPTER);
    String[] guice = {"com.google.inject..", "jakarta.inject..", base + ".guice.."};
    return classes().that().resideInAnyPackage(adapters)
        .should(new ArchCondition<JavaClass>("use Guice and queue-guice only in a Guice module") {
          @Override
          public void check(JavaClass origin, ConditionEvents events) {
            if (isGuicePart(origin)) {
              return;
            }
            for (Dependency d : origin.getDirectDependenciesFromSelf()) {
              JavaClass target = d.getTargetClass().getBaseComponentType();
              String pkg = target.getPackageName();
              if (pkg.startsWith("com.google.inject") || pkg.startsWith("jakarta.inject")
                  || pkg.equals(base + ".guice") || pkg.startsWith(base + ".guice.")) {
                events.add(SimpleConditionEvent.violated(d, origin.getName()
                    + " is no Guice module or BackendModuleProvider but uses " + target.getName()
                    + ": " + d.getDescription()));
              }
            }
          }
        })
        .allowEmptyShould(true)
        .as("an adapter depends on queue-core, and on queue-guice only for its optional module");
  }

  /** Only examples and benchmarks may depend on examples and benchmarks. */
  ArchRule nothingDependsOnApplications() {
    String[] applications = modules.patterns(Role.APPLICATION);
    return noClasses().that().resideOutsideOfPackages(applications)
        .should().dependOnClassesThat().resideInAnyPackage(applications)
        .as("nothing but examples and benchmarks depends on examples or benchmarks");
  }

  /**
   * A framework integration (spring-boot-starter) may use every adapter, and is used by
   * applications only: no core, support or adapter class depends on it, so a plain-Java or Guice
   * user never needs the framework on the class path.
   */
  ArchRule onlyApplicationsDependOnIntegrations() {
    String[] integrations = modules.patterns(Role.INTEGRATION);
    String[] mayUse = Stream.of(integrations, modules.patterns(Role.TEST_SUPPORT),
        modules.patterns(Role.APPLICATION)).flatMap(Stream::of).toArray(String[]::new);
    return noClasses().that().resideInAPackage(base + "..").and().resideOutsideOfPackages(mayUse)
        .should().dependOnClassesThat().resideInAnyPackage(integrations)
        .allowEmptyShould(true)
        .as("only applications depend on a framework integration (spring-boot-starter)");
  }

  /**
   * Test support (relaykit-test) is used by applications and tests only: no core, support,
   * adapter or integration class depends on it.
   */
  ArchRule onlyApplicationsDependOnTestSupport() {
    String[] support = modules.patterns(Role.TEST_SUPPORT);
    String[] mayUse = Stream.concat(Stream.of(support),
        Stream.of(modules.patterns(Role.APPLICATION))).toArray(String[]::new);
    return noClasses().that().resideInAPackage(base + "..").and().resideOutsideOfPackages(mayUse)
        .should().dependOnClassesThat().resideInAnyPackage(support)
        .allowEmptyShould(true)
        .as("only applications depend on the test support (relaykit-test)");
  }

  /**
   * Test code stays out of production code: only queue-tck (whose kits are JUnit suites), the
   * test support for applications (relaykit-test) and the applications may use JUnit, AssertJ or
   * the TCK.
   */
  ArchRule testLibrariesStayOutOfMainCode() {
    String[] mayUse = Stream.of(new String[] {base + ".tck.."},
        modules.patterns(Role.TEST_SUPPORT), modules.patterns(Role.APPLICATION))
        .flatMap(Stream::of).toArray(String[]::new);
    return noClasses().that().resideInAPackage(base + "..").and().resideOutsideOfPackages(mayUse)
        .should().dependOnClassesThat().resideInAnyPackage(
            "org.junit..", "org.assertj..", "org.opentest4j..", base + ".tck..")
        .as("main code outside queue-tck uses no JUnit, AssertJ or TCK class");
  }

  /**
   * A package named {@code internal} is used only by the module that owns it, except the one
   * shared-internals package {@code io.relaykit.internal} (in queue-core): every relaykit module
   * (core, support, adapters) may use it; applications (examples, benchmarks, chaos) and classes
   * in no module may not.
   */
  ArchRule internalPackagesStayInTheirModule() {
    return classes().that().resideInAPackage(base + "..")
        .should(new ArchCondition<JavaClass>("use only their own module's internal packages") {
          @Override
          public void check(JavaClass origin, ConditionEvents events) {
            Optional<Module> own = modules.moduleOf(origin.getPackageName());
            for (Dependency d : origin.getDirectDependenciesFromSelf()) {
              JavaClass target = d.getTargetClass().getBaseComponentType();
              String pkg = target.getPackageName();
              if (!pkg.startsWith(base + ".") || !RelayKitModules.isInternal(pkg)) {
                continue;
              }
              Optional<Module> owner = modules.moduleOf(pkg);
              boolean shared = pkg.equals(base + ".internal")
                  && own.map(m -> m.role() != Role.APPLICATION).orElse(false);
              if (!owner.equals(own) && !shared) {
                events.add(SimpleConditionEvent.violated(d, origin.getName() + " ("
                    + own.map(Module::name).orElse("no module") + ") uses " + target.getName()
                    + ", internal to " + owner.map(Module::name).orElse("no module") + ": "
                    + d.getDescription()));
              }
            }
          }
        })
        .as("no class uses another module's internal packages");
  }

  /**
   * No cycles between the top-level packages under the base ({@code queue}, {@code retry}, ...,
   * {@code storage}, {@code transport}, {@code guice}): within the core, between modules.
   */
  SliceRule noCyclesBetweenTopLevelPackages() {
    return slices().matching(base + ".(*)..").should().beFreeOfCycles()
        .as("top-level packages under " + base + " are free of cycles");
  }

  /** Every class under the base lives in a package some module owns (see RelayKitModules). */
  ArchRule everyClassBelongsToAModule() {
    return classes().that().resideInAPackage(base + "..")
        .should(new ArchCondition<JavaClass>("live in a package a module owns") {
          @Override
          public void check(JavaClass c, ConditionEvents events) {
            if (modules.moduleOf(c.getPackageName()).isEmpty()) {
              events.add(SimpleConditionEvent.violated(c, c.getName()
                  + " is in no module's package; add its package root to RelayKitModules"));
            }
          }
        })
        .as("every class belongs to a known module");
  }

  List<ArchRule> all() {
    List<ArchRule> rules = new ArrayList<>();
    rules.add(coreDependsOnJavaOnly());
    rules.add(guiceDependsOnCoreAndGuiceOnly());
    rules.add(adaptersAreIndependent());
    rules.add(adaptersUseGuiceOnlyInTheirModule());
    rules.add(nothingDependsOnApplications());
    rules.add(onlyApplicationsDependOnIntegrations());
    rules.add(onlyApplicationsDependOnTestSupport());
    rules.add(testLibrariesStayOutOfMainCode());
    rules.add(internalPackagesStayInTheirModule());
    rules.add(noCyclesBetweenTopLevelPackages());
    rules.add(everyClassBelongsToAModule());
    return rules;
  }
}

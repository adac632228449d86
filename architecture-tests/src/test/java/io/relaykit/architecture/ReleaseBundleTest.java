package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The release command, run as docs/releasing.md says: a throwaway GPG key in a temporary
 * GNUPGHOME, then {@code ./relaykit release --out target/nested/release} (the published modules
 * built at the release version from a copy of the work tree, {@code -Dmaven.test.skip=true},
 * deployed into the staging folder, nothing installed into the local repository), and every file
 * of the bundle checked: exactly the published artifacts (relaykit-parent and relaykit-bom as
 * poms; the fourteen libraries with pom, jar, sources and javadoc; relaykit-kafka's tests jar,
 * holding the KafkaTestBroker fixture), none of the
 * unpublished modules, each file with an .md5 and .sha1 that match and an .asc that gpg verifies
 * with the key, flattened poms with the metadata Central requires and no {@code ${...}} or
 * snapshot left, and a zip holding exactly the staging folder.
 *
 * <p>Cost: one build of the published modules with their javadoc, compiling tests only for
 * relaykit-kafka's published tests jar: 126-144 s of wall time measured for {@code ./relaykit
 * release} on a 2-core machine shared with other builds.
 */
class ReleaseBundleTest {

  /** The release command's --out: emptied before each run. */
  private static final Path WORK = NestedBuild.WORK.resolve("release");
  /** gpg's and the command's logs, beside it (the command empties only a folder it wrote). */
  private static final Path LOGS = NestedBuild.WORK.resolve("release-logs");
  private static final Set<String> UNPUBLISHED = Set.of("examples", "relaykit-chaos",
      "benchmarks", "architecture-tests", "relaykit-example-spring-boot-app",
      "relaykit-test-support");

  private static Path gnupgHome;

  @BeforeAll
  static void throwawayKey() throws Exception {
    assumeTrue(NestedBuild.mavenHome().isPresent(),
        "needs relaykit.maven.home (set by the pom when Maven runs the test)");
    // A short path of its own: gpg-agent's socket path must stay under 108 bytes.
    gnupgHome = Files.createTempDirectory(Path.of("/tmp"), "relaykit-gpg",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    assertThat(gpg(LOGS.resolve("gpg-keygen.log"), "--batch", "--passphrase", "",
        "--quick-gen-key", "relaykit release test <release-test@relaykit.invalid>", "ed25519",
        "sign", "never"))
        .as("gpg --quick-gen-key (gpg is needed: apt-get install gnupg)").isZero();
  }

  @AfterAll
  static void dropKey() throws Exception {
    if (gnupgHome != null) {
      run(List.of("gpgconf", "--kill", "gpg-agent"), LOGS.resolve("gpgconf.log"));
      NestedBuild.deleteTree(gnupgHome);
    }
  }

  @Test
  @DisplayName("./relaykit release writes a signed bundle of exactly the published artifacts")
  void releaseWritesTheCentralBundle() throws Exception {
    String devVersion = System.getProperty("relaykit.version", "");
    assertThat(devVersion).as("relaykit.version (set by the pom)").isNotBlank();
    String version = devVersion.replace("-SNAPSHOT", "");
    String key = fingerprint();

    List<String> command = new ArrayList<>(List.of(NestedBuild.ROOT.resolve("relaykit").toString(),
        "release", "--out", WORK.toString(), "--"));
    String localRepository = System.getProperty("relaykit.local.repository", "");
    if (!localRepository.isBlank()) {
      command.add("-Dmaven.repo.local=" + localRepository);
    }
    ProcessBuilder release = new ProcessBuilder(command).directory(NestedBuild.ROOT.toFile());
    release.environment().put("GNUPGHOME", gnupgHome.toString());
    release.environment().put("RELAYKIT_GPG_KEY", key);
    release.environment().remove("RELAYKIT_GPG_PASSPHRASE");
    release.environment().put("RELAYKIT_MVN",
        Path.of(NestedBuild.mavenHome().orElseThrow(), "bin", "mvn").toString());
    release.environment().remove("MAVEN_ARGS");
    NestedBuild.deleteTree(WORK);
    Path log = LOGS.resolve("release.log");
    long start = System.nanoTime();
    int exit = run(release, log, Duration.ofMinutes(40));
    System.out.printf("./relaykit release took %d s%n",
        Duration.ofNanos(System.nanoTime() - start).toSeconds());
    assertThat(exit).as("./relaykit release failed:%n%s%n(Maven's log: %s)",
        Files.readString(log, StandardCharsets.UTF_8), WORK.resolve("build.log")).isZero();

    Path group = WORK.resolve("staging").resolve("io").resolve("relaykit");
    Map<String, Set<String>> expected = new TreeMap<>();
    expected.put("relaykit-parent", signed("relaykit-parent-V.pom"));
    expected.put("relaykit-bom", signed("relaykit-bom-V.pom"));
    for (String library : InstalledArtifactsTest.LIBRARIES) {
      Set<String> files = signed(library + "-V.pom", library + "-V.jar",
          library + "-V-sources.jar", library + "-V-javadoc.jar");
      if (library.equals("relaykit-kafka")) {
        files.addAll(signed(library + "-V-tests.jar"));
      }
      expected.put(library, files);
    }
    Map<String, Set<String>> staged = stagedFiles(group, version);
    assertThat(staged.keySet()).as("artifacts in the bundle")
        .doesNotContainAnyElementsOf(UNPUBLISHED);
    assertThat(staged).as("files under io/relaykit/<artifact>/%s (V = %s)", version, version)
        .isEqualTo(expected);

    List<Path> artifacts;
    try (Stream<Path> all = Files.walk(group)) {
      artifacts = all.filter(Files::isRegularFile).filter(p -> !isSidecar(p)).sorted().toList();
    }
    for (Path artifact : artifacts) {
      assertThat(Files.readString(sidecar(artifact, ".md5")).trim()).as("md5 of %s", artifact)
          .isEqualTo(digest("MD5", artifact));
      assertThat(Files.readString(sidecar(artifact, ".sha1")).trim()).as("sha1 of %s", artifact)
          .isEqualTo(digest("SHA-1", artifact));
      assertThat(gpg(LOGS.resolve("gpg-verify.log"), "--batch", "--verify",
          sidecar(artifact, ".asc").toString(), artifact.toString()))
          .as("gpg --verify %s.asc: %s", artifact,
              Files.readString(LOGS.resolve("gpg-verify.log"), StandardCharsets.UTF_8))
          .isZero();
    }

    for (String artifactId : expected.keySet()) {
      checkPom(group.resolve(artifactId).resolve(version)
          .resolve(artifactId + "-" + version + ".pom"), artifactId, version);
    }
    for (String library : InstalledArtifactsTest.LIBRARIES) {
      checkJars(group.resolve(library).resolve(version), library, version);
    }
    // The one test jar: built although the release compiles no other module's tests.
    try (JarFile jar = new JarFile(group.resolve("relaykit-kafka").resolve(version)
        .resolve("relaykit-kafka-" + version + "-tests.jar").toFile())) {
      assertThat(jar.getEntry("io/relaykit/transport/kafka/KafkaTestBroker.class"))
          .as("KafkaTestBroker in relaykit-kafka's tests jar").isNotNull();
    }

    Path bundle = WORK.resolve("relaykit-" + version + "-bundle.zip");
    Set<String> inZip = new TreeSet<>();
    try (ZipFile zip = new ZipFile(bundle.toFile())) {
      zip.stream().filter(e -> !e.isDirectory()).map(ZipEntry::getName).forEach(inZip::add);
    }
    Set<String> inStaging = new TreeSet<>();
    try (Stream<Path> all = Files.walk(WORK.resolve("staging"))) {
      all.filter(Files::isRegularFile)
          .map(p -> WORK.resolve("staging").relativize(p).toString().replace('\\', '/'))
          .forEach(inStaging::add);
    }
    assertThat(inZip).as("entries of %s", bundle.getFileName()).isEqualTo(inStaging);

    String rootPom = Files.readString(NestedBuild.ROOT.resolve("pom.xml"), StandardCharsets.UTF_8);
    assertThat(rootPom).as("the work tree's pom keeps its development version")
        .contains("<version>" + devVersion + "</version>");
  }

  /** Flattened: coordinates, Central's required metadata, concrete versions, no parent. */
  private static void checkPom(Path pom, String artifactId, String version) throws Exception {
    String text = Files.readString(pom, StandardCharsets.UTF_8);
    assertThat(text).as("%s has no ${...} left", pom.getFileName()).doesNotContain("${");
    assertThat(text).as("%s names no snapshot", pom.getFileName()).doesNotContain("SNAPSHOT");
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Element project = factory.newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
    String what = pom.getFileName().toString();
    assertThat(text(project, "groupId")).as("groupId of " + what).isEqualTo("io.relaykit");
    assertThat(text(project, "artifactId")).as("artifactId of " + what).isEqualTo(artifactId);
    assertThat(text(project, "version")).as("version of " + what).isEqualTo(version);
    assertThat(elements(project, "parent")).as("parent of " + what).isEmpty();
    for (String[] path : new String[][] {{"name"}, {"description"}, {"url"},
        {"licenses", "license", "name"}, {"licenses", "license", "url"},
        {"developers", "developer", "name"}, {"scm", "url"}, {"scm", "connection"},
        {"scm", "developerConnection"}}) {
      assertThat(text(project, path)).as("%s of %s", String.join("/", path), what).isNotBlank();
    }
    List<Element> dependencies = new ArrayList<>();
    for (Element container : elements(project, "dependencies")) {
      dependencies.addAll(elements(container, "dependency"));
    }
    for (Element management : elements(project, "dependencyManagement")) {
      for (Element container : elements(management, "dependencies")) {
        dependencies.addAll(elements(container, "dependency"));
      }
    }
    for (Element dependency : dependencies) {
      assertThat(text(dependency, "version")).as("version of %s in %s",
          text(dependency, "artifactId"), what).isNotBlank();
      if (text(dependency, "groupId").equals("io.relaykit")) {
        assertThat(text(dependency, "version")).isEqualTo(version);
      }
    }
    if (artifactId.equals("relaykit-bom")) {
      assertThat(dependencies.stream().map(d -> text(d, "artifactId")).toList())
          .as("what relaykit-bom manages")
          .containsExactlyInAnyOrderElementsOf(InstalledArtifactsTest.LIBRARIES);
    }
  }

  /** Built at the release version; sources hold Java files; javadoc holds its index. */
  private static void checkJars(Path dir, String library, String version) throws IOException {
    try (JarFile jar = new JarFile(dir.resolve(library + "-" + version + ".jar").toFile())) {
      ZipEntry entry = jar.getEntry("META-INF/maven/io.relaykit/" + library + "/pom.properties");
      assertThat(entry).as("pom.properties in %s's jar", library).isNotNull();
      Properties properties = new Properties();
      try (InputStream in = jar.getInputStream(entry)) {
        properties.load(in);
      }
      assertThat(properties.getProperty("version")).as("version in %s's jar", library)
          .isEqualTo(version);
    }
    Path sources = dir.resolve(library + "-" + version + "-sources.jar");
    try (JarFile jar = new JarFile(sources.toFile())) {
      assertThat(jar.stream().map(ZipEntry::getName)).as("sources jar of %s", library)
          .anyMatch(n -> n.endsWith(".java"));
    }
    Path javadoc = dir.resolve(library + "-" + version + "-javadoc.jar");
    try (JarFile jar = new JarFile(javadoc.toFile())) {
      assertThat(jar.getEntry("index.html")).as("index.html in %s's javadoc jar", library)
          .isNotNull();
    }
  }

  private static Set<String> signed(String... files) {
    Set<String> out = new TreeSet<>();
    for (String file : files) {
      out.addAll(List.of(file, file + ".asc", file + ".md5", file + ".sha1"));
    }
    return out;
  }

  /** artifactId to its files (version written as V); fails on a directory of another version. */
  private static Map<String, Set<String>> stagedFiles(Path group, String version)
      throws IOException {
    Map<String, Set<String>> out = new TreeMap<>();
    assertThat(group).isDirectory();
    try (Stream<Path> artifacts = Files.list(group)) {
      for (Path artifact : artifacts.sorted().toList()) {
        Set<String> files = new TreeSet<>();
        try (Stream<Path> all = Files.walk(artifact)) {
          for (Path file : all.filter(Files::isRegularFile).toList()) {
            String relative = artifact.relativize(file).toString();
            assertThat(relative).as("path of a file of %s", artifact.getFileName())
                .startsWith(version + "/");
            files.add(file.getFileName().toString().replace(version, "V"));
          }
        }
        out.put(artifact.getFileName().toString(), files);
      }
    }
    return out;
  }

  private static boolean isSidecar(Path file) {
    String name = file.getFileName().toString();
    return name.endsWith(".asc") || name.endsWith(".md5") || name.endsWith(".sha1");
  }

  private static Path sidecar(Path file, String suffix) {
    return file.resolveSibling(file.getFileName() + suffix);
  }

  private static String digest(String algorithm, Path file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance(algorithm);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no " + algorithm, e);
    }
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buffer = new byte[64 * 1024];
      for (int n; (n = in.read(buffer)) > 0; ) {
        digest.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }

  /** The fingerprint of the throwaway key, read from gpg's machine-readable listing. */
  private static String fingerprint() throws Exception {
    Path listing = LOGS.resolve("gpg-keys.txt");
    assertThat(gpg(listing, "--batch", "--with-colons", "--list-secret-keys")).isZero();
    return Files.readAllLines(listing, StandardCharsets.UTF_8).stream()
        .filter(l -> l.startsWith("fpr:")).map(l -> l.split(":")[9]).findFirst()
        .orElseThrow(() -> new AssertionError("no key in " + listing));
  }

  private static int gpg(Path log, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("gpg", "--homedir", gnupgHome.toString()));
    command.addAll(List.of(args));
    return run(command, log);
  }

  private static int run(List<String> command, Path log) throws Exception {
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().put("GNUPGHOME", gnupgHome.toString());
    return run(builder, log, Duration.ofMinutes(2));
  }

  private static int run(ProcessBuilder builder, Path log, Duration timeout) throws Exception {
    Files.createDirectories(log.getParent());
    builder.redirectErrorStream(true).redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    Process process = builder.start();
    if (!process.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      throw new AssertionError(String.join(" ", builder.command()) + " did not finish in "
          + timeout + "; log: " + log);
    }
    return process.exitValue();
  }

  private static String text(Element element, String... path) {
    Element current = element;
    for (String name : path) {
      List<Element> found = elements(current, name);
      if (found.isEmpty()) {
        return "";
      }
      current = found.get(0);
    }
    return current.getTextContent().trim();
  }

  private static List<Element> elements(Element element, String name) {
    List<Element> out = new ArrayList<>();
    NodeList nodes = element.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      Node node = nodes.item(i);
      if (node instanceof Element e && e.getTagName().equals(name)) {
        out.add(e);
      }
    }
    return out;
  }
}

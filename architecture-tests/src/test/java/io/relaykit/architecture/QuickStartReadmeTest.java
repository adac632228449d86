package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * README's plain-Java quick start is the code the invoker project compiles and runs: every
 * {@code <!-- quickstart:NAME -->} block of README.md equals, line for line, the {@code
 * tag::NAME[]} region of src/it/plain-java-quickstart's QuickStart.java (with the region's common
 * indentation removed), and every region has its block.
 */
class QuickStartReadmeTest {

  private static final Path MODULE_DIR = Path.of(System.getProperty("basedir", ""))
      .toAbsolutePath();
  static final Path QUICK_START = MODULE_DIR.resolve(
      "src/it/plain-java-quickstart/src/main/java/quickstart/QuickStart.java");

  private static final Pattern README_BLOCK = Pattern.compile(
      "<!-- quickstart:([a-z0-9-]+) -->\\n```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern REGION = Pattern.compile(
      "^[ \\t]*// tag::([a-z0-9-]+)\\[\\]\\n(.*?)^[ \\t]*// end::\\1\\[\\]\\n",
      Pattern.DOTALL | Pattern.MULTILINE);

  @Test
  @DisplayName("every quick-start block of README.md is its region of QuickStart.java, word for word")
  void readmeBlocksAreTheCompiledCode() throws Exception {
    Map<String, String> blocks = readmeBlocks(
        Files.readString(MODULE_DIR.getParent().resolve("README.md"), StandardCharsets.UTF_8));
    Map<String, String> regions = regions(Files.readString(QUICK_START, StandardCharsets.UTF_8));

    assertThat(regions).as("tag::NAME[] regions of " + QUICK_START).hasSizeGreaterThanOrEqualTo(4)
        .containsKeys("outbox", "idempotency", "kafka", "rabbitmq");
    assertThat(blocks.keySet()).as("README quick-start blocks")
        .containsExactlyInAnyOrderElementsOf(regions.keySet());
    regions.forEach((name, code) -> assertThat(blocks.get(name))
        .as("README block quickstart:%s vs QuickStart.java's tag::%s[] region", name, name)
        .isEqualTo(code));
  }

  @Test
  @DisplayName("docs/testing.md's plain-Java example is OutboxWithRelayKitTest's tag::test[] region,"
      + " word for word")
  void testingDocIsTheCompiledTest() throws Exception {
    Path test = MODULE_DIR.resolve(
        "src/it/plain-java-quickstart/src/test/java/quickstart/OutboxWithRelayKitTest.java");
    Map<String, String> blocks = readmeBlocks(Files.readString(
        MODULE_DIR.getParent().resolve("docs/testing.md"), StandardCharsets.UTF_8));
    Map<String, String> regions = regions(Files.readString(test, StandardCharsets.UTF_8));
    assertThat(regions).containsKey("test");
    assertThat(blocks.get("test")).as("docs/testing.md block quickstart:test vs " + test)
        .isEqualTo(regions.get("test"));
  }

  @Test
  @DisplayName("a block that differs from its region by one character is caught")
  void aChangedBlockIsCaught() {
    String readme = "<!-- quickstart:a -->\n```java\nint x = 1;\n```\n";
    String source = "class A {\n  void a() {\n    // tag::a[]\n    int x = 2;\n    // end::a[]\n"
        + "  }\n}\n";
    assertThat(readmeBlocks(readme)).containsEntry("a", "int x = 1;\n");
    assertThat(regions(source)).containsEntry("a", "int x = 2;\n");
    assertThat(readmeBlocks(readme)).isNotEqualTo(regions(source));
  }

  static Map<String, String> readmeBlocks(String readme) {
    Map<String, String> out = new LinkedHashMap<>();
    Matcher m = README_BLOCK.matcher(readme);
    while (m.find()) {
      assertThat(out.put(m.group(1), m.group(2))).as("README block quickstart:" + m.group(1)
          + " appears once").isNull();
    }
    return out;
  }

  static Map<String, String> regions(String source) {
    Map<String, String> out = new LinkedHashMap<>();
    Matcher m = REGION.matcher(source);
    while (m.find()) {
      out.put(m.group(1), dedent(m.group(2)));
    }
    return out;
  }

  /** Removes the indentation every non-blank line shares. */
  private static String dedent(String text) {
    List<String> lines = new ArrayList<>(List.of(text.split("\n", -1)));
    int indent = Integer.MAX_VALUE;
    for (String line : lines) {
      if (!line.isBlank()) {
        indent = Math.min(indent, line.length() - line.stripLeading().length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      out.append(line.isBlank() ? "" : line.substring(indent));
      if (i < lines.size() - 1) {
        out.append('\n');
      }
    }
    return out.toString();
  }
}

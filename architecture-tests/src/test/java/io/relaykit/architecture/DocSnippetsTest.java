package io.relaykit.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The code in the docs is code the build compiles: every {@code ```java} block of README.md and
 * docs/**&#47;*.md is preceded by {@code <!-- snippet: PATH#NAME -->} and equals, line for line,
 * the {@code tag::NAME[]} ... {@code end::NAME[]} regions of PATH (relative to the repository
 * root; each region's common indentation removed, regions joined by a blank line, so a block can
 * show an import region and then its code). The same pages' relative links must point to files
 * that exist, and their {@code #anchors} to headings that exist.
 */
class DocSnippetsTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ""))
      .toAbsolutePath().getParent();

  private static final Pattern MARKER = Pattern.compile(
      "^<!-- snippet: (\\S+)#([a-z0-9-]+) -->$");
  private static final Pattern REGION_START = Pattern.compile("^[ \\t]*// tag::([a-z0-9-]+)\\[\\]$");
  private static final Pattern REGION_END = Pattern.compile("^[ \\t]*// end::([a-z0-9-]+)\\[\\]$");
  private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
  private static final Pattern INLINE_CODE = Pattern.compile("`[^`]*`");

  /** A Java block of a page: where it is, its marker (null when missing), its text. */
  record Block(String page, int line, String path, String region, String code) {}

  @Test
  @DisplayName("every Java block of README.md and docs/ is its snippet regions, word for word")
  void everyJavaBlockIsCompiledCode() throws IOException {
    List<Block> blocks = new ArrayList<>();
    for (Path page : pages()) {
      blocks.addAll(javaBlocks(ROOT.relativize(page).toString(), read(page)));
    }
    assertThat(blocks).as("Java blocks in README.md and docs/").hasSizeGreaterThan(10);
    List<String> problems = new ArrayList<>();
    for (Block b : blocks) {
      String where = b.page() + ":" + b.line();
      if (b.path() == null) {
        problems.add(where + ": a ```java block without <!-- snippet: PATH#NAME --> before it");
        continue;
      }
      Path source = ROOT.resolve(b.path());
      if (!Files.isRegularFile(source)) {
        problems.add(where + ": snippet source " + b.path() + " does not exist");
        continue;
      }
      String expected = region(read(source), b.region());
      if (expected == null) {
        problems.add(where + ": " + b.path() + " has no tag::" + b.region() + "[] region");
      } else if (!expected.equals(b.code())) {
        problems.add(where + ": differs from " + b.path() + "#" + b.region()
            + "; the region is:\n" + expected);
      }
    }
    assertThat(problems).as("Java blocks that are not their compiled regions").isEmpty();
  }

  @Test
  @DisplayName("every relative link of README.md and docs/ points to a file and heading that exist")
  void everyRelativeLinkResolves() throws IOException {
    List<String> problems = new ArrayList<>();
    for (Path page : pages()) {
      problems.addAll(brokenLinks(page));
    }
    assertThat(problems).as("broken relative links").isEmpty();
  }

  @Test
  @DisplayName("a block that differs from its region by one character, or has no marker, is caught")
  void aChangedOrUnmarkedBlockIsCaught() {
    String page = "text\n\n<!-- snippet: A.java#a -->\n```java\nimport x.Y;\n\nint x = 1;\n```\n\n"
        + "```java\nint y = 2;\n```\n";
    String source = "// tag::a[]\nimport x.Y;\n// end::a[]\nclass A {\n  void a() {\n"
        + "    // tag::a[]\n    int x = 2;\n    // end::a[]\n  }\n}\n";
    List<Block> blocks = javaBlocks("page.md", page);
    assertThat(blocks).hasSize(2);
    assertThat(blocks.get(0).code()).isEqualTo("import x.Y;\n\nint x = 1;\n");
    assertThat(region(source, "a")).isEqualTo("import x.Y;\n\nint x = 2;\n");
    assertThat(region(source, "a")).isNotEqualTo(blocks.get(0).code());
    assertThat(blocks.get(1).path()).as("a block with no marker").isNull();
    assertThat(region(source, "b")).isNull();
  }

  @Test
  @DisplayName("a link to a missing file or heading is caught, one to an existing heading is not")
  void aBrokenLinkIsCaught() {
    Set<String> slugs = slugs("# Chaos: `./relaykit chaos`\n## Limits, honestly\n## Limits, honestly\n");
    assertThat(slugs).contains("chaos-relaykit-chaos", "limits-honestly", "limits-honestly-1");
    assertThat(slugs).doesNotContain("proving-it-relaykit-chaos");
  }

  static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(ROOT.resolve("README.md"));
    try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  /** The {@code ```java} blocks of a page, each with the marker on the last non-blank line before it. */
  static List<Block> javaBlocks(String page, String text) {
    List<Block> out = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    String lastNonBlank = "";
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (line.startsWith("```")) {
        String info = line.substring(3).trim();
        int start = i;
        StringBuilder code = new StringBuilder();
        for (i = i + 1; i < lines.length && !lines[i].startsWith("```"); i++) {
          code.append(lines[i]).append('\n');
        }
        if (info.equals("java")) {
          Matcher m = MARKER.matcher(lastNonBlank.trim());
          out.add(m.matches()
              ? new Block(page, start + 1, m.group(1), m.group(2), code.toString())
              : new Block(page, start + 1, null, null, code.toString()));
        }
        lastNonBlank = "```";
        continue;
      }
      if (!line.isBlank()) {
        lastNonBlank = line;
      }
    }
    return out;
  }

  /** Every {@code tag::name[]} region of a source, dedented, joined by a blank line; null if none. */
  static String region(String source, String name) {
    List<String> parts = new ArrayList<>();
    List<String> current = null;
    for (String line : source.split("\n", -1)) {
      Matcher start = REGION_START.matcher(line);
      Matcher end = REGION_END.matcher(line);
      if (current == null && start.matches() && start.group(1).equals(name)) {
        current = new ArrayList<>();
      } else if (current != null && end.matches() && end.group(1).equals(name)) {
        parts.add(dedent(current));
        current = null;
      } else if (current != null && !start.matches() && !end.matches()) {
        current.add(line);
      }
    }
    assertThat(current).as("tag::" + name + "[] closed by end::" + name + "[]").isNull();
    return parts.isEmpty() ? null : String.join("\n", parts);
  }

  /** The lines without the indentation every non-blank one shares, each ending in a newline. */
  private static String dedent(List<String> lines) {
    int indent = Integer.MAX_VALUE;
    for (String line : lines) {
      if (!line.isBlank()) {
        indent = Math.min(indent, line.length() - line.stripLeading().length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      out.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
    }
    return out.toString();
  }

  private static final Map<Path, Set<String>> SLUGS = new HashMap<>();

  /** Relative links (outside code) of a page whose file or heading does not exist. */
  static List<String> brokenLinks(Path page) {
    List<String> problems = new ArrayList<>();
    String[] lines = read(page).split("\n", -1);
    boolean inFence = false;
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (line.stripLeading().startsWith("```")) {
        inFence = !inFence;
        continue;
      }
      if (inFence) {
        continue;
      }
      Matcher m = LINK.matcher(INLINE_CODE.matcher(line).replaceAll(""));
      while (m.find()) {
        String target = m.group(1);
        if (target.matches("^[a-z]+:.*")) {
          continue;   // http:, https:, mailto:
        }
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        String where = ROOT.relativize(page) + ":" + (i + 1) + ": (" + target + ")";
        if (!Files.exists(resolved)) {
          problems.add(where + " no such file");
        } else if (anchor != null && resolved.toString().endsWith(".md")
            && !SLUGS.computeIfAbsent(resolved, p -> slugs(read(p))).contains(anchor)) {
          problems.add(where + " no such heading in " + ROOT.relativize(resolved));
        }
      }
    }
    return problems;
  }

  /** GitHub's anchors for the headings of a Markdown text (outside code fences). */
  static Set<String> slugs(String markdown) {
    Set<String> out = new LinkedHashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    boolean inFence = false;
    for (String line : markdown.split("\n", -1)) {
      if (line.stripLeading().startsWith("```")) {
        inFence = !inFence;
        continue;
      }
      if (inFence || !line.startsWith("#")) {
        continue;
      }
      String heading = line.replaceFirst("^#+\\s*", "").trim().toLowerCase(Locale.ROOT);
      String slug = heading.codePoints()
          .filter(c -> Character.isLetterOrDigit(c) || c == ' ' || c == '-' || c == '_')
          .mapToObj(c -> c == ' ' ? "-" : new String(Character.toChars(c)))
          .collect(Collectors.joining());
      int n = seen.merge(slug, 1, Integer::sum) - 1;
      out.add(n == 0 ? slug : slug + "-" + n);
    }
    return out;
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

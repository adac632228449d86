package io.relaykit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URL;
import java.util.Optional;
import java.util.jar.Attributes;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The oldest client library versions relaykit's adapters run on, checked when an adapter starts:
 * a client older than its floor fails there with one line naming the library, the version found
 * and the floor ({@link ClientVersionException}), never later with a {@code NoSuchMethodError} or
 * {@code NoClassDefFoundError} on the delivery path. A version that cannot be read (classes
 * outside a jar, a repackaged jar without a manifest) is not refused: there is nothing to compare.
 *
 * <p>Internal: shared by relaykit's own modules, may change in any release.
 */
public final class ClientVersions {

  private static final Pattern NUMBERS = Pattern.compile("(\\d+)(?:\\.(\\d+))?(?:\\.(\\d+))?");

  private ClientVersions() {}

  /**
   * Throws unless {@code found} is at least {@code floor}.
   *
   * @param module the relaykit artifact that needs the library ({@code relaykit-kafka})
   * @param library the library's artifact ({@code kafka-clients})
   * @param found the version on the class path; null or unreadable: not checked
   * @param floor the oldest supported version
   * @param what what needs this floor, for the message ({@code null}: the module itself)
   * @throws ClientVersionException when {@code found} is older than {@code floor}
   */
  public static void require(String module, String library, String found, String floor,
      String what) {
    if (found == null || !NUMBERS.matcher(found.strip()).lookingAt()) {
      return;
    }
    if (compare(found, floor) < 0) {
      throw new ClientVersionException(module + (what == null ? "" : " (" + what + ")")
          + " needs " + library + " " + floor + " or newer, but " + library + " " + found.strip()
          + " is on the class path; upgrade " + library + " to " + floor + " or newer");
    }
  }

  /**
   * Compares the leading {@code major.minor.patch} numbers of two versions; a missing part is 0,
   * anything after the numbers ({@code .RELEASE}, {@code -rc1}) is ignored.
   *
   * @param a a version
   * @param b a version
   * @return negative, zero or positive as {@code a} is older than, equal to or newer than {@code b}
   * @throws IllegalArgumentException if either does not start with a number
   */
  public static int compare(String a, String b) {
    long[] x = parts(a);
    long[] y = parts(b);
    for (int i = 0; i < 3; i++) {
      if (x[i] != y[i]) {
        return Long.compare(x[i], y[i]);
      }
    }
    return 0;
  }

  private static long[] parts(String v) {
    Matcher m = NUMBERS.matcher(v == null ? "" : v.strip());
    if (!m.lookingAt()) {
      throw new IllegalArgumentException("not a version: '" + Texts.truncateChars(String.valueOf(v),
          40) + "'");
    }
    long[] out = new long[3];
    for (int i = 0; i < 3; i++) {
      String g = m.group(i + 1);
      out[i] = g == null ? 0 : Long.parseLong(g.length() > 9 ? g.substring(0, 9) : g);
    }
    return out;
  }

  /**
   * The version in the manifest of the jar that holds {@code type}: {@code Bundle-Version}, else
   * {@code Implementation-Version}.
   *
   * @param type a class of the library
   * @return the version, or empty when the class is not in a jar or its manifest names none
   */
  public static Optional<String> ofJar(Class<?> type) {
    URL own = type.getResource(type.getSimpleName() + ".class");
    if (own == null || !"jar".equals(own.getProtocol())) {
      return Optional.empty();
    }
    String s = own.toString();
    int bang = s.indexOf("!/");
    if (bang < 0) {
      return Optional.empty();
    }
    try (InputStream in = URI.create(s.substring(0, bang + 2) + "META-INF/MANIFEST.MF").toURL()
        .openStream()) {
      Attributes a = new Manifest(in).getMainAttributes();
      String v = a.getValue("Bundle-Version");
      if (v == null) {
        v = a.getValue(Attributes.Name.IMPLEMENTATION_VERSION);
      }
      return Optional.ofNullable(v).map(String::strip).filter(x -> !x.isEmpty());
    } catch (IOException | RuntimeException e) {
      return Optional.empty(); // unreadable: the version is unknown, not refused
    }
  }
}

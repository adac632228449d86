package io.relaykit.internal;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The one place relaykit decides what is a secret and how a value is shown in a log line, a
 * {@code toString()} or an error message. Not API: see the package comment.
 *
 * <p>Masking errs towards hiding too much: a value is shown with every URI's user info (everything
 * between {@code ://} and the last {@code @} before the next {@code ://}, except a plain user name
 * before the first {@code :}) and every {@code
 * password=}, {@code pwd=}, {@code secret=} or {@code token=} parameter replaced by {@code ****}.
 * A {@code @} in a URI's path therefore masks the host too; that costs readability, never a leak.
 */
public final class Secrets {
  private Secrets() {}

  /** What a hidden value or part of a value is shown as. */
  public static final String MASK = "****";

  /** Pass-through client families ({@code relaykit.kafka.producer.*} and the like). */
  private static final String[] PASS_THROUGH = {
    "relaykit.kafka.producer.", "relaykit.kafka.consumer.", "relaykit.kafka.admin."
  };
  /** Words that make a relaykit key secret wherever they appear. */
  private static final String[] SECRET_WORDS = {"password", "secret", "token", "credential"};
  /** Words that make a pass-through client key secret (client libraries name secrets freely). */
  private static final String[] PASS_THROUGH_WORDS = {
    "jaas", "password", "key", "secret", "token", "credential", "auth", "user.info"
  };
  private static final Pattern PARAMETER = Pattern.compile(
      "(?i)(\\b[a-z0-9_.-]*(?:password|pwd|secret|token)[a-z0-9_.-]*\\s*=\\s*)"
          + "(\"[^\"]*\"?|[^&;\\s]*)");

  /**
   * Whether {@code key}'s value is secret by its name: it contains {@code password}, {@code
   * secret}, {@code token} or {@code credential}, or it lies under a pass-through client family
   * ({@code relaykit.kafka.producer.*}, {@code .consumer.*}, {@code .admin.*}) and its name there
   * contains {@code jaas}, {@code password}, {@code key}, {@code secret}, {@code token}, {@code
   * credential}, {@code auth} or {@code user.info} ({@code -} and {@code _} read as {@code .}).
   * Over-matches on purpose (a pass-through {@code key.serializer} is masked too). O(key length).
   *
   * @param key a full key; null is not secret
   * @return true when the whole value must be hidden
   */
  public static boolean isSecretKey(String key) {
    if (key == null) {
      return false;
    }
    String k = key.toLowerCase(Locale.ROOT).replace('-', '.').replace('_', '.');
    for (String w : SECRET_WORDS) {
      if (k.contains(w)) {
        return true;
      }
    }
    for (String family : PASS_THROUGH) {
      if (k.startsWith(family)) {
        String name = k.substring(family.length());
        for (String w : PASS_THROUGH_WORDS) {
          if (name.contains(w)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /**
   * {@code value} fit to show: the user info of every {@code scheme://user:password@host} (also a
   * password alone, or one holding {@code @}, {@code /} or spaces) and the value of every {@code
   * password=}/{@code pwd=}/{@code secret=}/{@code token=} parameter (JDBC query or {@code ;}
   * style, JAAS {@code password="..."}) replaced by {@link #MASK}. O(length).
   *
   * @param value the value; null gives {@code "null"}
   * @return the masked value
   */
  public static String mask(String value) {
    if (value == null) {
      return "null";
    }
    StringBuilder sb = new StringBuilder(value.length());
    int from = 0;
    int scheme = value.indexOf("://");
    while (scheme >= 0) {
      int start = scheme + 3;
      int next = value.indexOf("://", start);
      int end = next < 0 ? value.length() : next;
      int at = value.lastIndexOf('@', end - 1);
      if (at >= start) {
        // Keep a plain user name (up to the first ':'), hide the rest up to the last '@'.
        int colon = value.indexOf(':', start);
        int keep = colon >= start && colon < at && plainUser(value, start, colon) ? colon + 1
            : start;
        sb.append(value, from, keep).append(MASK);
        from = at;
      }
      scheme = next;
    }
    sb.append(value, from, value.length());
    return PARAMETER.matcher(sb).replaceAll("$1" + MASK);
  }

  /** Whether {@code value[start, end)} can be a URI user name (no '@', '/', '?', '#', blank). */
  private static boolean plainUser(String value, int start, int end) {
    for (int i = start; i < end; i++) {
      char c = value.charAt(i);
      if (c == '@' || c == '/' || c == '?' || c == '#' || Character.isWhitespace(c)) {
        return false;
      }
    }
    return true;
  }
}

package io.relaykit.trace;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * One W3C Trace Context: the {@code traceparent} fields (trace id, parent span id, trace flags)
 * and the vendor {@code tracestate} list, as the recommendation (Trace Context Level 1, version
 * {@code 00}) defines them.
 *
 * <p>{@link #read} is for headers that arrive from a wire or a caller: it never throws, and
 * returns what it kept and what it dropped ({@link Read}), so a transport can count malformed
 * headers instead of failing the message. {@link #of} is for values built in code and throws on
 * invalid ones, naming the field and the value.
 *
 * <p>Immutable and thread-safe. O(length of the headers) per call; {@code tracestate} is bounded
 * to {@value #MAX_TRACESTATE_MEMBERS} members and {@value #MAX_TRACESTATE_LENGTH} characters (a
 * longer one is cut at a member boundary, as the recommendation allows).
 *
 * @param traceId 32 lowercase hex digits, not all zero
 * @param parentId the parent span id: 16 lowercase hex digits, not all zero
 * @param flags the trace flags byte (bit 0: sampled)
 * @param traceState the {@code tracestate} header value, validated and bounded; empty for none
 */
public record TraceContext(String traceId, String parentId, int flags, String traceState) {

  /** The header that carries trace id, parent id and flags. */
  public static final String TRACEPARENT = "traceparent";
  /** The header that carries the vendors' list of key=value members. */
  public static final String TRACESTATE = "tracestate";
  /** The most members a {@code tracestate} keeps (the recommendation's limit). */
  public static final int MAX_TRACESTATE_MEMBERS = 32;
  /** The most characters of {@code tracestate} kept (what the recommendation asks to propagate). */
  public static final int MAX_TRACESTATE_LENGTH = 512;

  private static final int VERSION_00_LENGTH = 55;
  /**
   * Longer than 32 members of a 256-character key, "=" and a 256-character value, with room for
   * separators and spaces: never valid, so refused before it is split.
   */
  private static final int MAX_TRACESTATE_INPUT = MAX_TRACESTATE_MEMBERS * 1024;

  /**
   * Validates the fields.
   *
   * @param traceId 32 lowercase hex digits, not all zero
   * @param parentId 16 lowercase hex digits, not all zero
   * @param flags one byte, 0 to 255
   * @param traceState a valid, bounded {@code tracestate} list; not null, empty for none
   * @throws IllegalArgumentException naming the field and its value when one is invalid
   */
  public TraceContext {
    if (!isHex(traceId, 32) || isZero(traceId)) {
      throw new IllegalArgumentException(
          "traceId must be 32 lowercase hex digits, not all zero, was '" + traceId + "'");
    }
    if (!isHex(parentId, 16) || isZero(parentId)) {
      throw new IllegalArgumentException(
          "parentId must be 16 lowercase hex digits, not all zero, was '" + parentId + "'");
    }
    if (flags < 0 || flags > 0xff) {
      throw new IllegalArgumentException("flags must be one byte (0..255), was " + flags);
    }
    if (traceState == null) {
      throw new IllegalArgumentException("traceState must not be null (use \"\" for none)");
    }
    Members members = members(traceState);
    if (members.malformed() || !members.value().equals(traceState)) {
      throw new IllegalArgumentException("traceState must be a valid, bounded W3C tracestate"
          + " list (at most " + MAX_TRACESTATE_MEMBERS + " members, " + MAX_TRACESTATE_LENGTH
          + " characters), was '" + traceState + "'");
    }
  }

  /**
   * A context built in code.
   *
   * @param traceId 32 lowercase hex digits, not all zero
   * @param parentId 16 lowercase hex digits, not all zero
   * @param sampled whether the caller records this trace (flags 01, else 00)
   * @return the context, with an empty {@code tracestate}
   * @throws IllegalArgumentException naming the field and its value when one is invalid
   */
  public static TraceContext of(String traceId, String parentId, boolean sampled) {
    return new TraceContext(traceId, parentId, sampled ? 1 : 0, "");
  }

  /**
   * Whether the caller recorded this trace (flags bit 0).
   *
   * @return true if flags bit 0 is set
   */
  public boolean sampled() {
    return (flags & 1) != 0;
  }

  /**
   * The {@code traceparent} header value, always written as version {@code 00}.
   *
   * @return the 55-character header value
   */
  public String traceparent() {
    return "00-" + traceId + "-" + parentId + "-" + String.format("%02x", flags);
  }

  /**
   * The same trace and state under another parent span, as a hop that starts its own span.
   *
   * @param spanId the new parent span id: 16 lowercase hex digits, not all zero
   * @return the new context
   * @throws IllegalArgumentException if {@code spanId} is invalid
   */
  public TraceContext withParent(String spanId) {
    return new TraceContext(traceId, spanId, flags, traceState);
  }

  /**
   * What {@link #read} made of a pair of headers.
   *
   * @param context the context, empty when {@code traceparent} was absent or malformed
   * @param malformedTraceparent whether a {@code traceparent} was present but malformed (ignored)
   * @param droppedTracestate whether a {@code tracestate} was present but malformed, or over the
   *     bounds and cut; the context keeps what was valid, or an empty state
   */
  public record Read(Optional<TraceContext> context, boolean malformedTraceparent,
      boolean droppedTracestate) {

    /**
     * Whether anything the headers carried was ignored or cut (count these).
     *
     * @return true if {@code malformedTraceparent} or {@code droppedTracestate}
     */
    public boolean anythingDropped() {
      return malformedTraceparent || droppedTracestate;
    }
  }

  /**
   * Reads {@code traceparent} and {@code tracestate} header values (either may be null: absent).
   * Never throws. Per the recommendation: a {@code traceparent} of an unknown higher version is
   * read by its version-00 prefix when it is followed by {@code -}; version {@code ff}, uppercase
   * hex, all-zero ids and wrong lengths are malformed; a malformed {@code tracestate} (a bad key
   * or value, a duplicate key, more than {@value #MAX_TRACESTATE_MEMBERS} members) is dropped
   * whole, and one longer than {@value #MAX_TRACESTATE_LENGTH} characters is cut to the members
   * that fit; a {@code tracestate} without a valid {@code traceparent} is ignored.
   *
   * @param traceparent the {@code traceparent} header value, or null
   * @param tracestate the {@code tracestate} header value, or null
   * @return what was kept and what was dropped; never null
   */
  public static Read read(String traceparent, String tracestate) {
    if (traceparent == null) {
      return new Read(Optional.empty(), false, false);
    }
    String p = traceparent.strip();
    if (!parentShaped(p)) {
      return new Read(Optional.empty(), true, false);
    }
    String traceId = p.substring(3, 35);
    String parentId = p.substring(36, 52);
    int flags = Integer.parseInt(p.substring(53, 55), 16);
    if (isZero(traceId) || isZero(parentId)) {
      return new Read(Optional.empty(), true, false);
    }
    String state = "";
    boolean dropped = false;
    if (tracestate != null) {
      Members m = members(tracestate);
      dropped = m.malformed() || m.cut();
      state = m.malformed() ? "" : m.value();
    }
    return new Read(Optional.of(new TraceContext(traceId, parentId, flags, state)), false,
        dropped);
  }

  private static boolean parentShaped(String p) {
    if (p.length() < VERSION_00_LENGTH || !isHex(p.substring(0, 2), 2)) {
      return false;
    }
    String version = p.substring(0, 2);
    if (version.equals("ff")) {
      return false;
    }
    if (version.equals("00") ? p.length() != VERSION_00_LENGTH
        : p.length() > VERSION_00_LENGTH && p.charAt(VERSION_00_LENGTH) != '-') {
      return false;
    }
    return p.charAt(2) == '-' && p.charAt(35) == '-' && p.charAt(52) == '-'
        && isHex(p.substring(3, 35), 32) && isHex(p.substring(36, 52), 16)
        && isHex(p.substring(53, 55), 2);
  }

  /** A tracestate's valid members joined back, whether it was malformed, and whether it was cut. */
  private record Members(String value, boolean malformed, boolean cut) {}

  private static Members members(String tracestate) {
    if (tracestate.length() > MAX_TRACESTATE_INPUT) {
      return new Members("", true, false); // more than 32 members of the longest legal size
    }
    List<String> kept = new ArrayList<>();
    Set<String> keys = new HashSet<>();
    for (String raw : tracestate.split(",", -1)) {
      String member = raw.strip();
      if (member.isEmpty()) {
        continue; // empty list members are allowed and dropped
      }
      int eq = member.indexOf('=');
      if (eq <= 0 || !validKey(member.substring(0, eq))
          || !validValue(member.substring(eq + 1)) || !keys.add(member.substring(0, eq))) {
        return new Members("", true, false);
      }
      kept.add(member);
      if (kept.size() > MAX_TRACESTATE_MEMBERS) {
        return new Members("", true, false);
      }
    }
    StringBuilder out = new StringBuilder();
    boolean cut = false;
    for (String member : kept) {
      int length = out.length() + (out.length() == 0 ? 0 : 1) + member.length();
      if (length > MAX_TRACESTATE_LENGTH) {
        cut = true;
        break; // the first members are the most recent vendors': keep those
      }
      if (out.length() > 0) {
        out.append(',');
      }
      out.append(member);
    }
    return new Members(out.toString(), false, cut);
  }

  // key = simple-key / multi-tenant-key
  // simple-key = lcalpha 0*255( lcalpha / DIGIT / "_" / "-"/ "*" / "/" )
  // multi-tenant-key = tenant-id "@" system-id
  // tenant-id = ( lcalpha / DIGIT ) 0*240( lcalpha / DIGIT / "_" / "-"/ "*" / "/" )
  // system-id = lcalpha 0*13( lcalpha / DIGIT / "_" / "-"/ "*" / "/" )
  private static boolean validKey(String key) {
    int at = key.indexOf('@');
    if (at < 0) {
      return key.length() <= 256 && isLcAlpha(key.charAt(0)) && keyChars(key, 1, key.length());
    }
    String tenant = key.substring(0, at);
    String system = key.substring(at + 1);
    return !tenant.isEmpty() && tenant.length() <= 241
        && (isLcAlpha(tenant.charAt(0)) || isDigit(tenant.charAt(0)))
        && keyChars(tenant, 1, tenant.length())
        && !system.isEmpty() && system.length() <= 14 && isLcAlpha(system.charAt(0))
        && keyChars(system, 1, system.length());
  }

  private static boolean keyChars(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (!(isLcAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '*' || c == '/')) {
        return false;
      }
    }
    return true;
  }

  // value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E
  private static boolean validValue(String value) {
    if (value.isEmpty() || value.length() > 256 || value.charAt(value.length() - 1) == ' ') {
      return false;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e || c == ',' || c == '=') {
        return false;
      }
    }
    return true;
  }

  private static boolean isLcAlpha(char c) {
    return c >= 'a' && c <= 'z';
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static boolean isHex(String s, int length) {
    if (s == null || s.length() != length) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      char c = s.charAt(i);
      if (!(isDigit(c) || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  private static boolean isZero(String hex) {
    for (int i = 0; i < hex.length(); i++) {
      if (hex.charAt(i) != '0') {
        return false;
      }
    }
    return true;
  }
}

package io.relaykit.message;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads a CloudEvents 1.0 event in structured content mode ({@code application/cloudevents+json}):
 * one JSON object whose members are the attributes and {@code data} or {@code data_base64}. Only
 * the top level is parsed: string-valued attributes are kept, other attribute values are skipped,
 * and {@code data} is kept as its JSON text (or, when it is a JSON string, as that string's UTF-8
 * bytes). Iterative (no recursion, so no nesting depth can overflow the stack) and O(body length).
 * Not API.
 */
final class CloudEventsJson {
  /** A structured event: its string attributes and its data bytes (empty when it has none). */
  record Event(Map<String, String> attributes, byte[] data) {}

  private final String s;
  private int i;

  private CloudEventsJson(String s) {
    this.s = s;
  }

  /** Whether {@code contentType} names structured mode (parameters and case ignored). */
  static boolean isStructured(String contentType) {
    if (contentType == null) {
      return false;
    }
    int semi = contentType.indexOf(';');
    String media = (semi < 0 ? contentType : contentType.substring(0, semi)).trim();
    return media.equalsIgnoreCase("application/cloudevents+json");
  }

  /**
   * Parses {@code body}.
   *
   * @throws MalformedMessageException naming what is wrong and where: not UTF-8, not one JSON
   *     object, a bad string escape, a duplicate member, data_base64 that is not base64
   */
  static Event parse(byte[] body) {
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(body)).toString();
    } catch (CharacterCodingException e) {
      throw new MalformedMessageException("structured CloudEvent is not valid UTF-8");
    }
    return new CloudEventsJson(text).event();
  }

  private Event event() {
    Map<String, String> attributes = new LinkedHashMap<>();
    byte[] data = null;
    boolean any = false;
    Set<String> seen = new HashSet<>();
    ws();
    expect('{');
    ws();
    if (peek() == '}') {
      i++;
    } else {
      while (true) {
        ws();
        String name = string();
        ws();
        expect(':');
        ws();
        if (!seen.add(name)) {
          throw bad("duplicate member '" + truncated(name) + "'");
        }
        if ((name.equals("data") || name.equals("data_base64")) && any) {
          throw bad("both data and data_base64");
        }
        if (peek() == '"') {
          String v = string();
          if (name.equals("data")) {
            data = v.getBytes(StandardCharsets.UTF_8);
            any = true;
          } else if (name.equals("data_base64")) {
            try {
              data = Base64.getDecoder().decode(v);
            } catch (IllegalArgumentException e) {
              throw bad("data_base64 is not base64: " + e.getMessage());
            }
            any = true;
          } else {
            attributes.put(name, v);
          }
        } else {
          int start = i;
          skipValue();
          if (name.equals("data")) {
            data = s.substring(start, i).getBytes(StandardCharsets.UTF_8);
            any = true;
          } else if (name.equals("data_base64")) {
            throw bad("data_base64 is not a string");
          }
        }
        ws();
        char c = next();
        if (c == '}') {
          break;
        }
        if (c != ',') {
          throw bad("expected ',' or '}'");
        }
      }
    }
    ws();
    if (i != s.length()) {
      throw bad("text after the event's object");
    }
    return new Event(attributes, data == null ? new byte[0] : data);
  }

  /**
   * Skips one non-string value (object, array, number, literal) and checks its grammar: open
   * containers are kept on an explicit stack, not recursed, so no nesting depth can overflow the
   * stack.
   */
  private void skipValue() {
    StringBuilder open = new StringBuilder(); // '{' or '[' per open container
    while (true) {
      // A value starts here.
      ws();
      char c = peek();
      if (c == '{' || c == '[') {
        i++;
        ws();
        if (peek() == (c == '{' ? '}' : ']')) {
          i++; // an empty container is a whole value
        } else {
          open.append(c);
          if (c == '{') {
            memberName();
          }
          continue;
        }
      } else if (c == '"') {
        string();
      } else {
        literal();
      }
      // A value ended: close containers, or go on to the next element.
      while (true) {
        if (open.length() == 0) {
          return;
        }
        ws();
        char top = open.charAt(open.length() - 1);
        char close = top == '{' ? '}' : ']';
        char n = next();
        if (n == ',') {
          if (top == '{') {
            memberName();
          }
          break;
        }
        if (n != close) {
          i--;
          throw bad("expected ',' or '" + close + "'");
        }
        open.setLength(open.length() - 1);
      }
    }
  }

  /** A member name and its colon, inside a skipped object. */
  private void memberName() {
    ws();
    if (peek() != '"') {
      throw bad("expected a member name");
    }
    string();
    ws();
    expect(':');
  }

  private void literal() {
    int start = i;
    while (i < s.length() && "{}[],: \t\r\n\"".indexOf(s.charAt(i)) < 0) {
      i++;
    }
    String literal = s.substring(start, i);
    if (!literal.equals("true") && !literal.equals("false") && !literal.equals("null")
        && !literal.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
      i = start;
      throw bad("not a JSON value: '" + truncated(literal) + "'");
    }
  }

  /**
   * A JSON string. An escaped surrogate must be half of a pair: a lone one is no Unicode text,
   * and it would turn into '?' when the value is written to a transport header as UTF-8, so two
   * events' ids would become one.
   */
  private String string() {
    expect('"');
    StringBuilder sb = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return sb.toString();
      }
      if (c == '\\') {
        char e = next();
        switch (e) {
          case '"', '\\', '/' -> sb.append(e);
          case 'b' -> sb.append('\b');
          case 'f' -> sb.append('\f');
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'u' -> {
            char u = hex4();
            if (Character.isHighSurrogate(u)) {
              if (i + 2 > s.length() || s.charAt(i) != '\\' || s.charAt(i + 1) != 'u') {
                throw bad("unpaired surrogate \\u" + Integer.toHexString(u));
              }
              i += 2;
              char low = hex4();
              if (!Character.isLowSurrogate(low)) {
                throw bad("unpaired surrogate \\u" + Integer.toHexString(u));
              }
              sb.append(u).append(low);
            } else if (Character.isLowSurrogate(u)) {
              throw bad("unpaired surrogate \\u" + Integer.toHexString(u));
            } else {
              sb.append(u);
            }
          }
          default -> throw bad("bad escape '\\" + e + "'");
        }
      } else if (c < 0x20) {
        throw bad("control character in a string");
      } else {
        sb.append(c);
      }
    }
  }

  /** The four hex digits of a \\u escape (ASCII digits and letters only, no sign). */
  private char hex4() {
    if (i + 4 > s.length()) {
      throw bad("cut \\u escape");
    }
    int v = 0;
    for (int k = 0; k < 4; k++) {
      char h = s.charAt(i + k);
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) {
        throw bad("bad \\u escape");
      }
      v = v * 16 + d;
    }
    i += 4;
    return (char) v;
  }

  private void ws() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
  }

  private char peek() {
    if (i >= s.length()) {
      throw bad("the event ends early");
    }
    return s.charAt(i);
  }

  private char next() {
    char c = peek();
    i++;
    return c;
  }

  private void expect(char c) {
    if (next() != c) {
      i--;
      throw bad("expected '" + c + "'");
    }
  }

  private MalformedMessageException bad(String what) {
    return new MalformedMessageException("structured CloudEvent is not a JSON object as"
        + " CloudEvents 1.0 writes it: " + what + " at offset " + i);
  }

  private static String truncated(String v) {
    return v.length() <= 32 ? v : v.substring(0, 32) + "...";
  }
}

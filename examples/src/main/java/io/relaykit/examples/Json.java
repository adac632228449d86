package io.relaykit.examples;

import com.fasterxml.jackson.databind.ObjectMapper;

/** The demo's one JSON mapper and a string quoter. */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private Json() {}

  /** {@code s} as a JSON string literal, quotes included. */
  static String quote(String s) {
    return MAPPER.getNodeFactory().textNode(s).toString();
  }
}

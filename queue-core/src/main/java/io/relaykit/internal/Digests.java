package io.relaykit.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Digests and hex the modules share (derived ids and trace ids, script hashes). The JDK must
 * provide SHA-256 and SHA-1 (every Java SE platform does); one missing is an {@link
 * IllegalStateException}. Not API: see the package comment.
 */
public final class Digests {
  private Digests() {}

  /**
   * A new SHA-256 digest.
   *
   * @return a fresh, unshared digest
   */
  public static MessageDigest sha256() {
    return digest("SHA-256");
  }

  /**
   * The SHA-1 of {@code text}'s UTF-8 bytes.
   *
   * @param text the text to hash; not null
   * @return 40 lowercase hex digits
   */
  public static String sha1Hex(String text) {
    return hex(digest("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)), 20);
  }

  /**
   * The first {@code bytes} bytes of SHA-256 over {@code text}'s UTF-8, in lowercase hex.
   *
   * @param text the text to hash; not null
   * @param bytes how many leading bytes of the digest to write, 0..32
   * @return {@code 2 * bytes} lowercase hex digits
   * @throws IllegalArgumentException if {@code bytes} is outside 0..32
   */
  public static String sha256Hex(String text, int bytes) {
    return hex(sha256().digest(text.getBytes(StandardCharsets.UTF_8)), bytes);
  }

  /**
   * The first {@code bytes} bytes of {@code data} as {@code 2 * bytes} lowercase hex digits.
   *
   * @param data the bytes; not null
   * @param bytes how many of them to write
   * @return the hex digits, high nibble first
   * @throws IllegalArgumentException if {@code bytes} is negative or more than {@code data} holds
   */
  public static String hex(byte[] data, int bytes) {
    if (bytes < 0 || bytes > data.length) {
      throw new IllegalArgumentException("bytes must be 0.." + data.length + ", was " + bytes);
    }
    StringBuilder hex = new StringBuilder(2 * bytes);
    for (int i = 0; i < bytes; i++) {
      hex.append(Character.forDigit((data[i] >> 4) & 0xF, 16))
          .append(Character.forDigit(data[i] & 0xF, 16));
    }
    return hex.toString();
  }

  private static MessageDigest digest(String algorithm) {
    try {
      return MessageDigest.getInstance(algorithm);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no " + algorithm, e);
    }
  }
}

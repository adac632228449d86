package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The first answer to a request sent with an {@code Idempotency-Key}, as {@link
 * IdempotencyKeyProtocol} keeps it to replay it: the request's fingerprint (to tell a repeat from
 * a different request under the same key), the status, the headers worth replaying and the body.
 * An answer whose body was over the protocol's bound is kept without it ({@link #bodyKept()} is
 * false, {@link #bodyLength()} says how long it was); a repeat then learns that the request was
 * processed, not what it answered.
 *
 * <p>Immutable. {@link #encode()} and {@link #decode(byte[])} are the one storage format (a
 * version byte, then length-prefixed fields); its size is {@link #encodedSize()}, which is what
 * the bound counts.
 */
public final class IdempotentAnswer {

  private static final int FORMAT = 1;
  /** Most header fields an answer keeps; more is a bad answer, not a reason to grow. */
  public static final int MAX_HEADERS = 64;

  private final String fingerprint;
  private final int status;
  private final Map<String, List<String>> headers;
  private final byte[] body;
  private final boolean bodyKept;
  private final long bodyLength;

  private IdempotentAnswer(String fingerprint, int status, Map<String, List<String>> headers,
      byte[] body, boolean bodyKept, long bodyLength) {
    this.fingerprint = Checks.requireNonBlank("fingerprint", fingerprint);
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be 100..599, was " + status);
    }
    this.status = status;
    Checks.requireNonNull("headers", headers);
    if (headers.size() > MAX_HEADERS) {
      throw new IllegalArgumentException("headers must be at most " + MAX_HEADERS + " fields, was "
          + headers.size());
    }
    Map<String, List<String>> copy = new LinkedHashMap<>();
    headers.forEach((name, values) -> {
      Checks.requireNonBlank("header name", name);
      Checks.requireNonNull("values of header " + name, values);
      List<String> vs = List.copyOf(values);
      if (!vs.isEmpty()) {
        copy.put(name, vs);
      }
    });
    this.headers = Collections.unmodifiableMap(copy);
    this.body = Checks.requireNonNull("body", body).clone();
    this.bodyKept = bodyKept;
    this.bodyLength = bodyLength;
  }

  /**
   * A complete answer.
   *
   * @param fingerprint the request's fingerprint; not blank
   * @param status the status code, 100..599
   * @param headers the headers to replay, in order; names not blank (an empty value list is
   *     dropped); at most {@link #MAX_HEADERS} names
   * @param body the body; copied
   * @return the answer
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the fingerprint or a header name is blank, the status is
   *     out of range, or there are too many headers
   */
  public static IdempotentAnswer of(String fingerprint, int status,
      Map<String, List<String>> headers, byte[] body) {
    return new IdempotentAnswer(fingerprint, status, headers, body, true, body.length);
  }

  /**
   * This answer without its body (kept when the whole answer is over the bound): status,
   * fingerprint and the body's length; no headers (they describe a body that is not kept).
   *
   * @return the answer without headers and body
   */
  public IdempotentAnswer withoutBody() {
    return new IdempotentAnswer(fingerprint, status, Map.of(), new byte[0], false, bodyLength);
  }

  /**
   * The request's fingerprint.
   *
   * @return the fingerprint the first request had
   */
  public String fingerprint() {
    return fingerprint;
  }

  /**
   * The status code.
   *
   * @return the first answer's status, 100..599
   */
  public int status() {
    return status;
  }

  /**
   * The headers kept, in the order given; unmodifiable.
   *
   * @return header names to their values
   */
  public Map<String, List<String>> headers() {
    return headers;
  }

  /**
   * The body kept (empty when not {@link #bodyKept()}).
   *
   * @return a copy of the body
   */
  public byte[] body() {
    return body.clone();
  }

  /**
   * Whether the body (and the headers) are kept.
   *
   * @return false if the answer was over the bound and only its status and length are kept
   */
  public boolean bodyKept() {
    return bodyKept;
  }

  /**
   * The first answer's body length in bytes, kept or not.
   *
   * @return the length of the body as first answered
   */
  public long bodyLength() {
    return bodyLength;
  }

  /**
   * The stored form.
   *
   * @return a version byte and the length-prefixed fields
   */
  public byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + body.length);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(FORMAT);
      writeString(out, fingerprint);
      out.writeShort(status);
      out.writeBoolean(bodyKept);
      out.writeLong(bodyLength);
      out.writeShort(headers.size());
      for (Map.Entry<String, List<String>> h : headers.entrySet()) {
        writeString(out, h.getKey());
        out.writeShort(h.getValue().size());
        for (String v : h.getValue()) {
          writeString(out, v);
        }
      }
      out.writeInt(body.length);
      out.write(body);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return bytes.toByteArray();
  }

  /**
   * The size of {@link #encode()}, which the protocol's bound counts.
   *
   * @return the stored form's length in bytes
   */
  public int encodedSize() {
    return encode().length;
  }

  /**
   * Reads a stored answer back.
   *
   * @param stored what {@link #encode()} wrote
   * @return the answer
   * @throws NullPointerException if {@code stored} is null
   * @throws IllegalArgumentException if {@code stored} is not an answer of a known format
   *     (truncated, corrupt, or written by a newer relaykit)
   */
  public static IdempotentAnswer decode(byte[] stored) {
    Objects.requireNonNull(stored, "stored");
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(stored))) {
      int format = in.readUnsignedByte();
      if (format != FORMAT) {
        throw new IllegalArgumentException("stored answer has format " + format + "; this"
            + " relaykit reads format " + FORMAT);
      }
      String fingerprint = readString(in, stored.length);
      int status = in.readUnsignedShort();
      boolean kept = in.readBoolean();
      long length = in.readLong();
      int names = in.readUnsignedShort();
      Map<String, List<String>> headers = new LinkedHashMap<>();
      for (int i = 0; i < names; i++) {
        String name = readString(in, stored.length);
        int n = in.readUnsignedShort();
        List<String> values = new ArrayList<>(Math.min(n, 16));
        for (int j = 0; j < n; j++) {
          values.add(readString(in, stored.length));
        }
        headers.put(name, values);
      }
      byte[] body = readBytes(in, stored.length);
      if (in.available() != 0) {
        throw new IllegalArgumentException("stored answer has " + in.available()
            + " trailing bytes");
      }
      return new IdempotentAnswer(fingerprint, status, headers, body, kept, length);
    } catch (IOException e) {
      throw new IllegalArgumentException("stored answer is truncated (" + stored.length
          + " bytes)", e);
    }
  }

  private static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  private static String readString(DataInputStream in, int limit) throws IOException {
    return new String(readBytes(in, limit), StandardCharsets.UTF_8);
  }

  private static byte[] readBytes(DataInputStream in, int limit) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > limit) {
      throw new IllegalArgumentException("stored answer has a field of length " + n
          + " in " + limit + " bytes");
    }
    byte[] b = new byte[n];
    in.readFully(b);
    return b;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof IdempotentAnswer a && status == a.status && bodyKept == a.bodyKept
        && bodyLength == a.bodyLength && fingerprint.equals(a.fingerprint)
        && headers.equals(a.headers) && Arrays.equals(body, a.body);
  }

  @Override
  public int hashCode() {
    return Objects.hash(fingerprint, status, headers, bodyKept, bodyLength)
        * 31 + Arrays.hashCode(body);
  }

  @Override
  public String toString() {
    // Bodies are not printed (they may hold personal data).
    return "IdempotentAnswer[status=" + status + ", headers=" + headers.keySet() + ", bodyLength="
        + bodyLength + (bodyKept ? "" : " (not kept)") + "]";
  }
}

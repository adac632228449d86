package io.relaykit.internal;

/**
 * A client library on the class path is older than the oldest version relaykit supports; the
 * message is one line naming the library, the version found and the floor. Thrown when an adapter
 * starts (see {@link ClientVersions}).
 */
public class ClientVersionException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  /**
   * An exception with {@code message}.
   *
   * @param message one line: library, version found, floor
   */
  public ClientVersionException(String message) {
    super(message);
  }
}

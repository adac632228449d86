package io.relaykit.storage.jdbc;

/**
 * The database holds relaykit tables at a schema version this build does not know (written by a
 * newer relaykit). relaykit refuses to touch them rather than guess; upgrade relaykit or point it at
 * another table prefix.
 */
public class SchemaVersionException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  /**
   * An exception with {@code message}.
   *
   * @param message the version found, the version this build knows, and (for older tables) the
   *     scripts that are missing
   */
  public SchemaVersionException(String message) {
    super(message);
  }
}

package io.relaykit.storage.jdbc;

/**
 * A JDBC store could not do what was asked: the database is unreachable, a statement failed, a
 * connection was closed under it. The message names the store, the operation and the table; the
 * cause is the driver's {@link java.sql.SQLException}. Retryable unless the cause says otherwise.
 */
public class JdbcStorageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * An exception with {@code message} and {@code cause}.
   *
   * @param message what failed: the store, the operation and the table
   * @param cause the driver's exception (usually a {@link java.sql.SQLException}), or null
   */
  public JdbcStorageException(String message, Throwable cause) {
    super(message, cause);
  }
}

package io.relaykit.storage.h2;

import io.relaykit.storage.jdbc.JdbcConfigKeys;

/**
 * The key names of {@link JdbcConfigKeys}, which it was renamed to. Each constant holds the new
 * {@code relaykit.jdbc.*} name; the old {@code relaykit.h2.*} names still work as deprecated
 * aliases for one release. Not registered with {@link java.util.ServiceLoader}.
 *
 * @deprecated use {@link JdbcConfigKeys}; this class is removed in the next release.
 */
@Deprecated(since = "0.1.0", forRemoval = true)
public final class H2ConfigKeys {
  /** See {@link JdbcConfigKeys#URL}. */
  public static final String URL = JdbcConfigKeys.URL;
  /** See {@link JdbcConfigKeys#USERNAME}. */
  public static final String USERNAME = JdbcConfigKeys.USERNAME;
  /** See {@link JdbcConfigKeys#PASSWORD}. */
  public static final String PASSWORD = JdbcConfigKeys.PASSWORD;
  /** See {@link JdbcConfigKeys#POOL_SIZE}. */
  public static final String POOL_SIZE = JdbcConfigKeys.POOL_SIZE;
  /** See {@link JdbcConfigKeys#TABLE_PREFIX}. */
  public static final String TABLE_PREFIX = JdbcConfigKeys.TABLE_PREFIX;
  /** See {@link JdbcConfigKeys#LEASE}. */
  public static final String LEASE = JdbcConfigKeys.LEASE;
  /** See {@link JdbcConfigKeys#RETENTION}. */
  public static final String RETENTION = JdbcConfigKeys.RETENTION;
  /** See {@link JdbcConfigKeys#JOURNAL_NAME}. */
  public static final String JOURNAL_NAME = JdbcConfigKeys.JOURNAL_NAME;
  /** See {@link JdbcConfigKeys#MIGRATE}. */
  public static final String MIGRATE = JdbcConfigKeys.MIGRATE;
  /** See {@link JdbcConfigKeys#OUTBOX_MAX_UNSENT}. */
  public static final String OUTBOX_MAX_UNSENT = JdbcConfigKeys.OUTBOX_MAX_UNSENT;
  /** See {@link JdbcConfigKeys#OUTBOX_OVER_BOUND}. */
  public static final String OUTBOX_OVER_BOUND = JdbcConfigKeys.OUTBOX_OVER_BOUND;
  /** See {@link JdbcConfigKeys#OUTBOX_ORDER_SCOPE}. */
  public static final String OUTBOX_ORDER_SCOPE = JdbcConfigKeys.OUTBOX_ORDER_SCOPE;

  private H2ConfigKeys() {}
}

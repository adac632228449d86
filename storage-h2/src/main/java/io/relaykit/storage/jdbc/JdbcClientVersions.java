package io.relaykit.storage.jdbc;

import io.relaykit.internal.ClientVersions;

/**
 * The oldest client libraries relaykit-jdbc runs on, what Spring Boot 4.0 manages: HikariCP
 * {@value #HIKARICP_FLOOR} (for the pool relaykit opens itself), PostgreSQL JDBC {@value
 * #POSTGRESQL_FLOOR}, H2 {@value #H2_FLOOR}. Checked when a storage opens, so an older jar fails
 * there with one line; a driver that is not on the class path, or whose jar names no version, is
 * not checked.
 */
final class JdbcClientVersions {
  static final String HIKARICP_FLOOR = "7.0.2";
  static final String POSTGRESQL_FLOOR = "42.7.11";
  static final String H2_FLOOR = "2.4.240";

  private JdbcClientVersions() {}

  /** @throws io.relaykit.internal.ClientVersionException if HikariCP is too old */
  static void checkPool() {
    check("HikariCP", "com.zaxxer.hikari.HikariDataSource", HIKARICP_FLOOR);
  }

  /** @throws io.relaykit.internal.ClientVersionException if {@code dialect}'s driver is too old */
  static void checkDriver(Dialect dialect) {
    if (dialect == Dialect.POSTGRESQL) {
      check("postgresql (PostgreSQL JDBC)", "org.postgresql.Driver", POSTGRESQL_FLOOR);
    } else if (dialect == Dialect.H2) {
      check("h2", "org.h2.Driver", H2_FLOOR);
    }
  }

  private static void check(String library, String className, String floor) {
    Class<?> type;
    try {
      type = Class.forName(className, false, JdbcClientVersions.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError absent) {
      return; // not on this class path (an application's own DataSource brings its driver)
    }
    ClientVersions.require("relaykit-jdbc", library, ClientVersions.ofJar(type).orElse(null),
        floor, null);
  }
}

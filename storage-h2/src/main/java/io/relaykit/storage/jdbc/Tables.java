package io.relaykit.storage.jdbc;

import java.util.regex.Pattern;

/** The table names for one table prefix. */
final class Tables {
  /** Letters, digits and underscores, starting with a letter; short enough for PostgreSQL's 63. */
  static final Pattern PREFIX = Pattern.compile("[A-Za-z][A-Za-z0-9_]{0,29}");

  final String prefix;
  final String schemaVersion;
  final String outbox;
  final String outboxHead;
  final String deadLetter;
  final String idempotency;
  final String versionGuard;
  final String journal;

  Tables(String prefix) {
    this.prefix = requireValidPrefix(prefix);
    this.schemaVersion = prefix + "schema_version";
    this.outbox = prefix + "outbox";
    this.outboxHead = prefix + "outbox_head";
    this.deadLetter = prefix + "dead_letter";
    this.idempotency = prefix + "idempotency";
    this.versionGuard = prefix + "version_guard";
    this.journal = prefix + "journal";
  }

  static String requireValidPrefix(String prefix) {
    if (prefix == null || !PREFIX.matcher(prefix).matches()) {
      throw new IllegalArgumentException("tablePrefix must match " + PREFIX.pattern()
          + " (a letter, then up to 29 letters, digits or underscores), was " + prefix);
    }
    return prefix;
  }
}

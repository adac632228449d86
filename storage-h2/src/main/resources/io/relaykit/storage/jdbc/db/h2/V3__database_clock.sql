-- relaykit JDBC storage, schema version 3 (H2): the database's clock for shared decisions. H2's
-- CURRENT_TIMESTAMP is fixed for a whole transaction, so leases, takeovers and retention read
-- RELAYKIT_CLOCK_MILLIS() instead: System.currentTimeMillis() in the JVM that hosts the database
-- (the server's in H2's server and AUTO_SERVER modes). One function per schema, shared by every
-- table prefix in it. See DatabaseClock.

CREATE ALIAS IF NOT EXISTS RELAYKIT_CLOCK_MILLIS FOR 'java.lang.System.currentTimeMillis';

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (3, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

-- relaykit JDBC storage, schema version 3 (PostgreSQL): the database's clock for shared
-- decisions. PostgreSQL needs nothing new: leases, takeovers and retention read clock_timestamp()
-- (now() is fixed for a whole transaction). The version exists so that both dialects number their
-- schemas alike. See DatabaseClock.

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (3, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

-- relaykit JDBC storage, schema version 4 (PostgreSQL): the report-queue journal stores each
-- instant as epoch seconds (BIGINT) plus nanoseconds (INT), which holds any java.time.Instant.
-- The BIGINT nanosecond columns of version 1 covered only the years 1678 to 2261, so an expiry in
-- year 9999, or Instant.MAX from a saturated retry time, could not be stored. Rows of earlier
-- versions are copied into the new columns (a floor split, so times before
-- 1970 come out right); the old columns stay, unused by this version.

ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS seen_s BIGINT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS seen_ns INT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS enqueued_s BIGINT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS enqueued_ns INT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS next_attempt_s BIGINT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS next_attempt_ns INT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS expires_s BIGINT;
ALTER TABLE ${prefix}journal ADD COLUMN IF NOT EXISTS expires_ns INT;

UPDATE ${prefix}journal SET seen_ns = MOD(MOD(seen_at, 1000000000) + 1000000000, 1000000000),
    seen_s = (seen_at - MOD(MOD(seen_at, 1000000000) + 1000000000, 1000000000)) / 1000000000
  WHERE seen_at IS NOT NULL AND seen_s IS NULL;
UPDATE ${prefix}journal SET enqueued_ns = MOD(MOD(enqueued_at, 1000000000) + 1000000000, 1000000000),
    enqueued_s = (enqueued_at - MOD(MOD(enqueued_at, 1000000000) + 1000000000, 1000000000)) / 1000000000
  WHERE enqueued_at IS NOT NULL AND enqueued_s IS NULL;
UPDATE ${prefix}journal SET next_attempt_ns = MOD(MOD(next_attempt_at, 1000000000) + 1000000000, 1000000000),
    next_attempt_s = (next_attempt_at - MOD(MOD(next_attempt_at, 1000000000) + 1000000000, 1000000000)) / 1000000000
  WHERE next_attempt_at IS NOT NULL AND next_attempt_s IS NULL;
UPDATE ${prefix}journal SET expires_ns = MOD(MOD(expires_at, 1000000000) + 1000000000, 1000000000),
    expires_s = (expires_at - MOD(MOD(expires_at, 1000000000) + 1000000000, 1000000000)) / 1000000000
  WHERE expires_at IS NOT NULL AND expires_s IS NULL;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (4, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

-- relaykit JDBC storage, schema version 9 (PostgreSQL): a claim reads O(batch) unkeyed rows
-- whatever the backlog's shape, rows rescheduled into the future included. Before, the unkeyed
-- claim scanned outbox_unsent_unkeyed in seq order and filtered readiness afterwards, so every
-- claim read each backed-off row in front of the ready ones.
-- * outbox_unsent_fresh: unkeyed unsent rows never rescheduled (ready_at = 0, always due), in seq
--   order: the claim reads them oldest first and stops after a batch.
-- * outbox_unsent_retry: unkeyed unsent rows rescheduled (ready_at > 0), by the time they are
--   due: the claim reads only the due ones (ready_at <= now), earliest first.
-- outbox_unsent_unkeyed stays: stats count the unkeyed backlog through it.
-- A reschedule now writes an index entry (ready_at is indexed for unkeyed rows): the failure path
-- pays, claims do not.

CREATE INDEX IF NOT EXISTS ${prefix}outbox_unsent_fresh ON ${prefix}outbox (seq)
  WHERE state = 0 AND msg_key IS NULL AND ready_at = 0;
CREATE INDEX IF NOT EXISTS ${prefix}outbox_unsent_retry ON ${prefix}outbox (ready_at, seq)
  WHERE state = 0 AND msg_key IS NULL AND ready_at > 0;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (9, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

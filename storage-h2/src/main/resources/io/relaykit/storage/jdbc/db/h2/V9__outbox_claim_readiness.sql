-- relaykit JDBC storage, schema version 9 (H2): a claim reads O(batch) unkeyed rows whatever the
-- backlog's shape, rows rescheduled into the future included. Before, the unkeyed claim scanned
-- outbox_order in seq order and filtered readiness afterwards, so every claim read each
-- backed-off row in front of the ready ones.
-- * outbox_ready: (msg_key, order_dest, state, ready_at, seq). Unkeyed rows never rescheduled
--   (ready_at = 0, always due) are one equality range in seq order; rescheduled ones
--   (ready_at > 0) a range by the time they are due, read only up to now.

CREATE INDEX IF NOT EXISTS ${prefix}outbox_ready ON ${prefix}outbox (msg_key, order_dest, state, ready_at, seq);

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (9, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

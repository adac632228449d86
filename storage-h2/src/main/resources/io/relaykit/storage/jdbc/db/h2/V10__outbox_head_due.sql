-- relaykit JDBC storage, schema version 10 (H2): a claim reads O(batch + due heads) key heads
-- whatever the backlog's shape, keys whose lowest unsent row is backed off into the future
-- included. Before, the keyed claim walked every head in head_seq order and dropped the heads
-- whose row was not ready.
-- * head_due: the ready_at of the key's lowest unsent row (0: never rescheduled, always due), kept
--   where the head moves on and where that row is rescheduled, under the head's row lock; never
--   later than the row's real due time (a skipped update keeps an earlier value).
-- * outbox_head_due: (head_due, head_seq). Heads due now (head_due = 0) are one equality range in
--   head_seq order; rescheduled ones a range by due time, read only up to now.

ALTER TABLE ${prefix}outbox_head ADD COLUMN IF NOT EXISTS head_due BIGINT DEFAULT 0 NOT NULL;

CREATE INDEX IF NOT EXISTS ${prefix}outbox_head_due ON ${prefix}outbox_head (head_due, head_seq);

UPDATE ${prefix}outbox_head h SET head_due = COALESCE((SELECT o.ready_at FROM ${prefix}outbox o
    WHERE o.seq = (SELECT MIN(x.seq) FROM ${prefix}outbox x WHERE x.msg_key = h.msg_key
      AND x.order_dest = h.order_dest AND x.state = 0)), 0)
  WHERE h.head_seq IS NOT NULL AND h.head_due = 0;

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (10, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

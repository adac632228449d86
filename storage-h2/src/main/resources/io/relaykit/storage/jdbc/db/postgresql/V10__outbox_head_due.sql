-- relaykit JDBC storage, schema version 10 (PostgreSQL): a claim reads O(batch + due heads) key
-- heads whatever the backlog's shape, keys whose lowest unsent row is backed off into the future
-- included. Before, the keyed claim walked every head in head_seq order and dropped the heads
-- whose row was not ready, so each key waiting for a retry cost every claim one probe.
-- * head_due: the ready_at of the key's lowest unsent row (0: never rescheduled, always due), kept
--   where the head moves on and where that row is rescheduled, under the head's row lock. It is
--   never later than the row's real due time: where the lock is held by an append and the update
--   is skipped, it keeps an earlier value and the claim walks the head (as before) until it moves.
-- * outbox_head_fresh: heads due now (head_due = 0), in head_seq order: claims read them oldest
--   first and stop after a batch.
-- * outbox_head_retry: heads of rescheduled rows (head_due > 0), by due time: claims read only
--   the due ones.

ALTER TABLE ${prefix}outbox_head ADD COLUMN IF NOT EXISTS head_due BIGINT NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS ${prefix}outbox_head_fresh ON ${prefix}outbox_head (head_seq)
  WHERE head_seq IS NOT NULL AND head_due = 0;
CREATE INDEX IF NOT EXISTS ${prefix}outbox_head_retry ON ${prefix}outbox_head (head_due, head_seq)
  WHERE head_seq IS NOT NULL AND head_due > 0;

-- Heads whose key's lowest unsent row is rescheduled already.
UPDATE ${prefix}outbox_head h SET head_due = o.ready_at
  FROM ${prefix}outbox o
  WHERE o.seq = (SELECT MIN(x.seq) FROM ${prefix}outbox x WHERE x.msg_key = h.msg_key
      AND x.order_dest = h.order_dest AND x.state = 0 AND x.msg_key IS NOT NULL)
    AND h.head_seq IS NOT NULL AND o.ready_at > 0 AND h.head_due = 0;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (10, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

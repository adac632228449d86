-- relaykit JDBC storage, schema version 7 (H2): per-key order follows commit order, and keyed
-- claims cost O(batch) whatever the backlog's shape.
-- * order_dest: the row's order scope beside msg_key: '' when the key orders across all
--   destinations (the only scope before this version, so existing rows get ''), the destination
--   when the key orders per destination.
-- * outbox_head: one row per (msg_key, order_dest) with unsent rows. An append locks it in the
--   caller's transaction (so same-key appends take turns and sequence order is commit order);
--   head_seq is the lowest unsent seq of the key (NULL: none left), kept by append, markSent,
--   markDead; claims read heads in head_seq order instead of the backlog.

ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS order_dest VARCHAR(255) DEFAULT '' NOT NULL;

CREATE TABLE IF NOT EXISTS ${prefix}outbox_head (
  msg_key VARCHAR(512) NOT NULL,
  order_dest VARCHAR(255) NOT NULL,
  head_seq BIGINT,
  PRIMARY KEY (msg_key, order_dest)
);
-- Claims walk heads oldest first and stop after a batch.
CREATE INDEX IF NOT EXISTS ${prefix}outbox_head_seq ON ${prefix}outbox_head (head_seq);
-- A key's lowest unsent row (one probe), and the unkeyed claim (msg_key IS NULL, order_dest '',
-- state 0, in seq order).
CREATE INDEX IF NOT EXISTS ${prefix}outbox_order ON ${prefix}outbox (msg_key, order_dest, state, seq);
DROP INDEX IF EXISTS ${prefix}outbox_key;

-- Heads of the keys that have unsent rows already (all in scope '').
INSERT INTO ${prefix}outbox_head (msg_key, order_dest, head_seq)
  SELECT o.msg_key, o.order_dest, MIN(o.seq) FROM ${prefix}outbox o
  WHERE o.state = 0 AND o.msg_key IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM ${prefix}outbox_head h
      WHERE h.msg_key = o.msg_key AND h.order_dest = o.order_dest)
  GROUP BY o.msg_key, o.order_dest;

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (7, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

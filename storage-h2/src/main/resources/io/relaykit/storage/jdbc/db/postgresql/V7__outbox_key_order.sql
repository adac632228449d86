-- relaykit JDBC storage, schema version 7 (PostgreSQL): per-key order follows commit order, and
-- keyed claims cost O(batch) whatever the backlog's shape.
-- * order_dest: the row's order scope beside msg_key: '' when the key orders across all
--   destinations (the only scope before this version, so existing rows get ''), the destination
--   when the key orders per destination.
-- * outbox_head: one row per (msg_key, order_dest) with unsent rows. An append locks it in the
--   caller's transaction (so same-key appends take turns and sequence order is commit order);
--   head_seq is the lowest unsent seq of the key (NULL: none left), kept by append, markSent,
--   markDead; claims read heads in head_seq order instead of the backlog.
-- * Partial indexes cover unsent rows only, so their size follows the backlog, not the history;
--   fillfactor leaves room on each page for HOT updates of lease and retry columns (a claim's
--   lease, a reschedule), which then write no index entries.

ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS order_dest VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE ${prefix}outbox SET (fillfactor = 80);

CREATE TABLE IF NOT EXISTS ${prefix}outbox_head (
  msg_key VARCHAR(512) NOT NULL,
  order_dest VARCHAR(255) NOT NULL,
  head_seq BIGINT,
  PRIMARY KEY (msg_key, order_dest)
) WITH (fillfactor = 70);
-- Claims walk heads oldest first and stop after a batch.
CREATE INDEX IF NOT EXISTS ${prefix}outbox_head_seq ON ${prefix}outbox_head (head_seq)
  WHERE head_seq IS NOT NULL;
-- A key's lowest unsent row: one probe.
CREATE INDEX IF NOT EXISTS ${prefix}outbox_unsent_key ON ${prefix}outbox (msg_key, order_dest, seq)
  WHERE state = 0 AND msg_key IS NOT NULL;
-- The unkeyed claim: unsent rows without a key in seq order.
CREATE INDEX IF NOT EXISTS ${prefix}outbox_unsent_unkeyed ON ${prefix}outbox (seq)
  WHERE state = 0 AND msg_key IS NULL;
-- Replaced by the partial indexes above (they held every sent row too).
DROP INDEX IF EXISTS ${prefix}outbox_key;
DROP INDEX IF EXISTS ${prefix}outbox_claim;

-- Heads of the keys that have unsent rows already (all in scope '').
INSERT INTO ${prefix}outbox_head (msg_key, order_dest, head_seq)
  SELECT msg_key, order_dest, MIN(seq) FROM ${prefix}outbox
  WHERE state = 0 AND msg_key IS NOT NULL
  GROUP BY msg_key, order_dest
  ON CONFLICT (msg_key, order_dest) DO NOTHING;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (7, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

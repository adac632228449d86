-- relaykit JDBC storage, schema version 8 (PostgreSQL): appends that a caller may retry, and replays
-- that keep the dead letter until the resend is confirmed.
-- * outbox.request_id: an optional id the caller gives an append; a retry with the same id finds
--   the row instead of writing a twin. request_digest (SHA-256 of destination, type, key and
--   payload, hex) tells a retry from another message under the same id. A partial index holds
--   only the ids given, so appends without one cost nothing.
-- * dead_letter.replay_token / replay_until: a replay marks the dead letter before it resends and
--   deletes it only after the resend (fenced by the token); replay_until (nanoseconds on the
--   database's clock) is when another replay may take the mark over.

ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS request_id VARCHAR(255);
ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS request_digest VARCHAR(64);
CREATE UNIQUE INDEX IF NOT EXISTS ${prefix}outbox_request ON ${prefix}outbox (request_id)
  WHERE request_id IS NOT NULL;

ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS replay_token VARCHAR(64);
ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS replay_until BIGINT;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (8, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

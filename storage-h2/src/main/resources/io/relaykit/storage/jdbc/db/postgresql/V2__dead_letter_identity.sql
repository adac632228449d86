-- relaykit JDBC storage, schema version 2 (PostgreSQL): a dead letter is identified by (message
-- id, source, consumer group), not by the message id alone, so one message dead-lettered at two
-- destinations or by two consumer groups keeps two rows. id holds that identity encoded as
-- DeadLetter.idOf does: <message id>@<source>[#<group>], with %, @ and # in each part
-- percent-encoded. Rows of version 1 (id = message id, no group) are rewritten in place.

ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS message_id VARCHAR(255);
ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS consumer_group VARCHAR(255);
ALTER TABLE ${prefix}dead_letter ALTER COLUMN id TYPE VARCHAR(2048);

UPDATE ${prefix}dead_letter
  SET message_id = id,
      id = REPLACE(REPLACE(REPLACE(id, '%', '%25'), '@', '%40'), '#', '%23') || '@'
        || REPLACE(REPLACE(REPLACE(source, '%', '%25'), '@', '%40'), '#', '%23')
  WHERE message_id IS NULL;

ALTER TABLE ${prefix}dead_letter ALTER COLUMN message_id SET NOT NULL;

INSERT INTO ${prefix}schema_version (version, applied_at)
  VALUES (2, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT))
  ON CONFLICT (version) DO NOTHING;

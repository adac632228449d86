-- relaykit JDBC storage, schema version 2 (H2): a dead letter is identified by (message id,
-- source, consumer group), not by the message id alone, so one message dead-lettered at two
-- destinations or by two consumer groups keeps two rows. id holds that identity encoded as
-- DeadLetter.idOf does: <message id>@<source>[#<group>], with %, @ and # in each part
-- percent-encoded. Rows of version 1 (id = message id, no group) are rewritten in place.
-- Idempotent: H2 commits each DDL statement, so a run cut short is completed by the next one.

ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS message_id VARCHAR(255);
ALTER TABLE ${prefix}dead_letter ADD COLUMN IF NOT EXISTS consumer_group VARCHAR(255);
ALTER TABLE ${prefix}dead_letter ALTER COLUMN id SET DATA TYPE VARCHAR(2048);

UPDATE ${prefix}dead_letter
  SET message_id = id,
      id = REPLACE(REPLACE(REPLACE(id, '%', '%25'), '@', '%40'), '#', '%23') || '@'
        || REPLACE(REPLACE(REPLACE(source, '%', '%25'), '@', '%40'), '#', '%23')
  WHERE message_id IS NULL;

ALTER TABLE ${prefix}dead_letter ALTER COLUMN message_id SET NOT NULL;

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (2, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

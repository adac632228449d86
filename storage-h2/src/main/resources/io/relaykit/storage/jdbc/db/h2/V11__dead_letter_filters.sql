-- relaykit JDBC storage, schema version 11 (H2): a filtered page of dead letters reads about one
-- page of rows, however many dead letters the table holds and however deep the page. Each index
-- holds one filter's column, then the listing order (last_failure_at, id), so a page filtered by
-- it is one index range read in order (either direction) from a keyset position, stopping when
-- the page is full. dead_letter_source_group also serves a source and group together and the
-- per-source counts (GROUP BY source, consumer_group). A reason filter has no index: it is
-- checked on the rows of whichever range the other filters select.
-- Idempotent (IF NOT EXISTS): a run cut short is completed by the next one.

CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_source ON ${prefix}dead_letter (source, last_failure_at, id);
CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_source_group ON ${prefix}dead_letter (source, consumer_group, last_failure_at, id);
CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_group ON ${prefix}dead_letter (consumer_group, last_failure_at, id);
CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_exception ON ${prefix}dead_letter (exception_class, last_failure_at, id);
CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_type ON ${prefix}dead_letter (msg_type, last_failure_at, id);
CREATE INDEX IF NOT EXISTS ${prefix}dead_letter_message ON ${prefix}dead_letter (message_id, last_failure_at, id);

MERGE INTO ${prefix}schema_version (version, applied_at) KEY (version)
  VALUES (11, DATEDIFF(NANOSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP));

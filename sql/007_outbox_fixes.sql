-- A redaction never takes a proposal out of the outbox: one still waiting for
-- its first post (whatever its status) keeps waiting, one already posted or
-- still open is queued for a re-post. (006 dropped an approved proposal that
-- had not been posted yet.)
CREATE OR REPLACE FUNCTION proposal_source_removed() RETURNS TRIGGER AS $$
BEGIN
    UPDATE proposals p SET
        payload = CASE WHEN OLD.example IS NULL OR NOT (p.payload ? 'examples') THEN p.payload
                  ELSE jsonb_set(p.payload, '{examples}', COALESCE((
                      SELECT jsonb_agg(e) FROM jsonb_array_elements(p.payload -> 'examples') e
                      WHERE e #>> '{}' <> OLD.example), '[]'::jsonb)) END,
        evidence = CASE WHEN NOT (p.evidence ? 'messages') THEN p.evidence
                   ELSE jsonb_set(p.evidence, '{messages}', COALESCE((
                       SELECT jsonb_agg(m) FROM jsonb_array_elements(p.evidence -> 'messages') m
                       WHERE (m ->> 'message_id') IS DISTINCT FROM OLD.message_id::text), '[]'::jsonb)) END,
        post_pending = (p.post_pending OR p.posted_ref IS NOT NULL OR p.status = 'pending')
    WHERE p.id = OLD.proposal_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- Forgetting and re-absorbing look up the relational gate's log by message.
CREATE INDEX IF NOT EXISTS kg_gate_log_message_idx ON kg_gate_log (message_id);

-- A dream run stopped part-way (SIGTERM, a kill) is 'abandoned', not 'running' forever.
ALTER TABLE dream_runs DROP CONSTRAINT dream_runs_status_check;
ALTER TABLE dream_runs ADD CONSTRAINT dream_runs_status_check
    CHECK (status IN ('running', 'ok', 'partial', 'failed', 'abandoned'));

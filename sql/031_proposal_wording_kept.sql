-- 031 a proposal's wording stays while messages that still exist hold it (P8): forgetting one person renamed an
-- approved archetype "git_advice" to "redacted_1" and blanked its theme words, although the examples left, which
-- others said, hold "git" and "advice" too. Deleting a wording source now redacts the wording only when no other
-- wording source of the proposal whose message still exists holds every word of the name and of the evidence
-- terms (whole words, any case): what is redacted is what only the forgotten messages said. A word the analysis
-- made that no message holds as written is never held, so it is redacted as before (the safe side).

-- Whether every word of ``target``'s name and evidence terms is held by a message among its wording sources,
-- leaving out the messages ``leaving`` (those being forgotten, when asked before they go).
CREATE FUNCTION proposal_wording_kept(target BIGINT, leaving BIGINT[]) RETURNS BOOLEAN AS $$
    WITH p AS (SELECT payload, evidence FROM proposals WHERE id = target),
    words AS (
        SELECT DISTINCT w FROM p,
            LATERAL unnest(
                string_to_array(COALESCE(p.payload ->> 'name', ''), '_')
                || ARRAY(SELECT jsonb_array_elements_text(
                       CASE WHEN jsonb_typeof(p.evidence -> 'terms') = 'array' THEN p.evidence -> 'terms'
                            ELSE '[]'::jsonb END))
            ) AS w
        WHERE w ~ '[[:alpha:]]'
    ),
    holders AS (
        SELECT m.content FROM proposal_sources s JOIN messages m ON m.id = s.message_id
        WHERE s.proposal_id = target AND s.wording AND NOT (s.message_id = ANY(leaving))
    )
    SELECT EXISTS (SELECT 1 FROM holders)
       AND NOT EXISTS (
           SELECT 1 FROM words
           WHERE NOT EXISTS (SELECT 1 FROM holders h WHERE h.content ~* whole_word_pattern(words.w)))
$$ LANGUAGE sql STABLE;

CREATE OR REPLACE FUNCTION proposal_wording_source_removed() RETURNS TRIGGER AS $$
BEGIN
    IF NOT proposal_wording_kept(OLD.proposal_id, '{}'::BIGINT[]) THEN
        PERFORM redact_proposal_wording(OLD.proposal_id);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

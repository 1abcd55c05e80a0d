-- 019 a proposal's wording is forgotten with the messages it is made of (issue 32.17).
-- Why: forgetting a person redacted a proposal's examples and evidence entries, but its name, title,
-- description, rationale and evidence terms were made of that person's words as well (their made-up
-- word stayed in all of them), and the dream run's stored report that named the proposal kept it too.
-- Each source of a proposal now says whether the proposal's wording holds its words (``wording``, set
-- by the dream's archetype analysis: the members whose words make the theme's name and terms, and every
-- example when a language model named it). Deleting such a source redacts the wording: the name becomes
-- ``redacted_<proposal id>`` wherever it stood (the payload, the title, an archetype applied from the
-- proposal and the proposals that edit it, the notes of dream run reports), the description becomes a
-- fixed sentence, the evidence terms go, and every term or name word left in the title or the rationale
-- reads [redacted]. Provenance stays: the proposal keeps its other sources and says it was redacted.
-- Sources recorded before this migration did not say which of them the wording came from, so every
-- source of an archetype proposal counts as one.

ALTER TABLE proposal_sources ADD COLUMN wording BOOLEAN NOT NULL DEFAULT false;
UPDATE proposal_sources s SET wording = true
  FROM proposals p WHERE p.id = s.proposal_id AND p.kind = 'new_archetype';

-- A word as a regular expression matching it whole (it may hold any character).
CREATE FUNCTION whole_word_pattern(word TEXT) RETURNS TEXT AS $$
    SELECT '\m' || regexp_replace(word, '([.^$*+?()\[\]{}|\\-])', '\\\1', 'g') || '\M'
$$ LANGUAGE sql IMMUTABLE;

CREATE FUNCTION redact_proposal_wording(target BIGINT) RETURNS VOID AS $$
DECLARE
    p proposals%ROWTYPE;
    old_name TEXT;
    new_name TEXT;
    words TEXT[];
    w TEXT;
    new_title TEXT;
    new_rationale TEXT;
    described CONSTANT TEXT :=
        'A recurring kind of message (its wording came from forgotten messages and was redacted).';
    archetype_scope TEXT;
BEGIN
    SELECT * INTO p FROM proposals WHERE id = target FOR UPDATE;
    IF NOT FOUND OR COALESCE(p.evidence ->> 'wording_redacted', '') = 'true' THEN
        RETURN;  -- gone with its scope, or redacted already
    END IF;
    old_name := p.payload ->> 'name';
    new_name := 'redacted_' || p.id;
    words := ARRAY(SELECT jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(p.evidence -> 'terms') = 'array' THEN p.evidence -> 'terms' ELSE '[]'::jsonb END));
    new_title := p.title;
    new_rationale := p.rationale;
    IF old_name IS NOT NULL THEN
        words := words || string_to_array(old_name, '_');
        new_title := regexp_replace(new_title, whole_word_pattern(old_name), new_name, 'g');
        new_rationale := regexp_replace(new_rationale, whole_word_pattern(old_name), new_name, 'g');
    END IF;
    FOREACH w IN ARRAY words LOOP
        CONTINUE WHEN w IS NULL OR w !~ '[[:alpha:]]';  -- the "2" of "topic_2" says nothing
        new_title := regexp_replace(new_title, whole_word_pattern(w), '[redacted]', 'gi');
        new_rationale := regexp_replace(new_rationale, whole_word_pattern(w), '[redacted]', 'gi');
    END LOOP;
    UPDATE proposals SET
        title = new_title,
        rationale = new_rationale,
        payload = CASE WHEN old_name IS NULL THEN payload ELSE jsonb_set(payload, '{name}', to_jsonb(new_name)) END
                  || CASE WHEN payload ? 'description' THEN jsonb_build_object('description', described)
                          ELSE '{}'::jsonb END,
        evidence = evidence || jsonb_build_object('terms', '[]'::jsonb, 'wording_redacted', true),
        post_pending = (post_pending OR posted_ref IS NOT NULL OR status = 'pending')
    WHERE id = target;
    IF old_name IS NULL THEN
        RETURN;
    END IF;
    -- The archetype approving it made, if it still has the name, and the proposals that would edit it.
    UPDATE context_archetypes a SET archetype_name = new_name,
           description = CASE WHEN a.description IS NOT DISTINCT FROM p.payload ->> 'description'
                              THEN described ELSE a.description END
     WHERE a.id = p.applied_archetype_id AND a.archetype_name = old_name
       AND NOT EXISTS (SELECT 1 FROM context_archetypes o
                        WHERE o.archetype_name = new_name AND o.scope IS NOT DISTINCT FROM a.scope)
    RETURNING a.scope INTO archetype_scope;
    IF FOUND THEN
        UPDATE proposals e SET
            payload = jsonb_set(e.payload, '{name}', to_jsonb(new_name)),
            title = regexp_replace(e.title, whole_word_pattern(old_name), new_name, 'g'),
            rationale = regexp_replace(e.rationale, whole_word_pattern(old_name), new_name, 'g'),
            post_pending = (e.post_pending OR e.posted_ref IS NOT NULL OR e.status = 'pending')
         WHERE e.kind = 'edit_archetype' AND e.payload ->> 'name' = old_name
           AND e.scope IS NOT DISTINCT FROM archetype_scope;
    END IF;
    -- The dream runs that could have named it (its scope's, and the nightly runs over every scope).
    UPDATE dream_runs d SET report = (
        SELECT jsonb_object_agg(step, CASE WHEN jsonb_typeof(body -> 'notes') = 'array'
            THEN jsonb_set(body, '{notes}', (
                SELECT COALESCE(jsonb_agg(to_jsonb(regexp_replace(note, whole_word_pattern(old_name), new_name, 'g'))
                                          ORDER BY i), '[]'::jsonb)
                FROM jsonb_array_elements_text(body -> 'notes') WITH ORDINALITY AS n(note, i)))
            ELSE body END)
        FROM jsonb_each(d.report) AS s(step, body))
     WHERE jsonb_typeof(d.report) = 'object' AND d.report::text ~ whole_word_pattern(old_name)
       AND (p.scope IS NULL OR d.scope IS NULL OR d.scope = p.scope);
END;
$$ LANGUAGE plpgsql;

CREATE FUNCTION proposal_wording_source_removed() RETURNS TRIGGER AS $$
BEGIN
    PERFORM redact_proposal_wording(OLD.proposal_id);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER proposal_wording_source_removed
AFTER DELETE ON proposal_sources
FOR EACH ROW WHEN (OLD.wording) EXECUTE FUNCTION proposal_wording_source_removed();

-- 021 an archetype's match statistics lose the matches of forgotten messages (issue 32.13).
-- Why: ``match_count`` and ``avg_similarity`` are a running fold of every match logged
-- (memory/archetypes.py record_matches), but a match deleted with its message (forgetting one, a person,
-- a channel; a DM scope dropped whole) stayed in them, and an edited message, whose match is deleted and
-- logged again, was counted twice. Deleting a match now takes it out of its archetype's fold, however it
-- is deleted (directly or by the messages cascade); the fold of today's rows is recomputed once, since
-- matches were only ever deleted with their messages or on an edit.

CREATE FUNCTION unfold_deleted_matches() RETURNS TRIGGER AS $$
BEGIN
    UPDATE context_archetypes a SET
        match_count = GREATEST(a.match_count - g.n, 0),
        avg_similarity = CASE WHEN a.match_count - g.n <= 0 THEN NULL
                              ELSE (COALESCE(a.avg_similarity, 0) * a.match_count - g.total) / (a.match_count - g.n)
                         END
      FROM (SELECT archetype_id, count(*) AS n, sum(similarity) AS total FROM deleted_matches
             WHERE NOT used_default AND archetype_id IS NOT NULL GROUP BY archetype_id) g
     WHERE a.id = g.archetype_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- Per statement, with the deleted rows as a table: forgetting a person's thousand messages is one update per
-- archetype, not one per message.
CREATE TRIGGER archetype_matches_unfold
AFTER DELETE ON archetype_matches
REFERENCING OLD TABLE AS deleted_matches
FOR EACH STATEMENT EXECUTE FUNCTION unfold_deleted_matches();

UPDATE context_archetypes a SET match_count = s.n, avg_similarity = s.mean
  FROM (SELECT c.id, count(m.id)::int AS n, avg(m.similarity) AS mean
          FROM context_archetypes c
          LEFT JOIN archetype_matches m ON m.archetype_id = c.id AND NOT m.used_default
         GROUP BY c.id) s
 WHERE s.id = a.id AND (a.match_count, a.avg_similarity) IS DISTINCT FROM (s.n, s.mean);

-- 029 which claim won: a contradicted edge remembers the edge that contradicted it (issue 28, corrections).
-- Why: "I moved from Lisbon to Porto" halved "lives in Lisbon" and set contradicted_at, but nothing said which
-- newer claim had won, so the message that said "I live in Lisbon" still answered "where do I live?" beside
-- the one that corrected it. With the winner known, recall leaves out a memory whose every fact lost to a newer
-- memory in the same prompt (SemanticMemory.superseded). The contradiction is derived from the winner's
-- message: when the winner goes (its message forgotten, its edge pruned), the old claim is current again, with
-- the confidence it had before.
ALTER TABLE kg_edges ADD COLUMN contradicted_by BIGINT;
CREATE INDEX kg_edges_contradicted_by_idx ON kg_edges (contradicted_by) WHERE contradicted_by IS NOT NULL;

CREATE FUNCTION kg_winner_removed() RETURNS TRIGGER AS $$
BEGIN
    UPDATE kg_edges SET contradicted_by = NULL, contradicted_at = NULL, confidence = LEAST(confidence / 0.5, 1.0)
        WHERE contradicted_by = OLD.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER kg_winner_removed
AFTER DELETE ON kg_edges
FOR EACH ROW EXECUTE FUNCTION kg_winner_removed();

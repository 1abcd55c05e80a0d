-- 030 one place for how much a contradiction costs (issue 31, review of 029): the Python that contradicts an
-- edge multiplied its confidence by 0.5 and 029's trigger divided by a second 0.5 to restore it. Both now read
-- kg_contradicted_factor(), so the two cannot drift apart.
CREATE FUNCTION kg_contradicted_factor() RETURNS double precision
    LANGUAGE sql IMMUTABLE AS 'SELECT 0.5::double precision';

CREATE OR REPLACE FUNCTION kg_winner_removed() RETURNS TRIGGER AS $$
BEGIN
    UPDATE kg_edges SET contradicted_by = NULL, contradicted_at = NULL,
                        confidence = LEAST(confidence / kg_contradicted_factor(), 1.0)
        WHERE contradicted_by = OLD.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

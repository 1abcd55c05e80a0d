-- 004 semantic memory (issue 5; seeds 004 GhostKG and 001 SGC-RSS): a
-- knowledge graph of triples per scope, FSRS-6 memory state on nodes and
-- edges, provenance per edge, and a log of every admission-gate decision.

CREATE TABLE kg_nodes (
    id          BIGSERIAL PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope <> ''),
    name        TEXT NOT NULL,               -- normalised key: lower-case lemma, or 'user:<id>' / 'bot'
    display     TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('person', 'bot', 'entity')),
    embedding   vector(384),
    -- FSRS-6 card (the fsrs package; NULL stability until the first review)
    fsrs_state  INT NOT NULL DEFAULT 1,
    fsrs_step   INT,
    stability   DOUBLE PRECISION,
    difficulty  DOUBLE PRECISION,
    due         TIMESTAMPTZ,
    last_review TIMESTAMPTZ,
    reps        INT NOT NULL DEFAULT 0,
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (scope, name)
);

CREATE TABLE kg_edges (
    id             BIGSERIAL PRIMARY KEY,
    scope          TEXT NOT NULL CHECK (scope <> ''),
    source_id      BIGINT NOT NULL REFERENCES kg_nodes (id) ON DELETE CASCADE,
    relation       TEXT NOT NULL,
    target_id      BIGINT NOT NULL REFERENCES kg_nodes (id) ON DELETE CASCADE,
    sentiment      REAL NOT NULL DEFAULT 0 CHECK (sentiment BETWEEN -1 AND 1),
    confidence     REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    evidence_count INT NOT NULL DEFAULT 1,
    first_seen     TIMESTAMPTZ NOT NULL,
    last_seen      TIMESTAMPTZ NOT NULL,
    pinned         BOOLEAN NOT NULL DEFAULT false,
    fsrs_state     INT NOT NULL DEFAULT 1,
    fsrs_step      INT,
    stability      DOUBLE PRECISION,
    difficulty     DOUBLE PRECISION,
    due            TIMESTAMPTZ,
    last_review    TIMESTAMPTZ,
    reps           INT NOT NULL DEFAULT 0,
    UNIQUE (scope, source_id, relation, target_id)
);
CREATE INDEX kg_edges_source_idx ON kg_edges (source_id);
CREATE INDEX kg_edges_target_idx ON kg_edges (target_id);

-- Provenance: which messages (and whose) support an edge.
CREATE TABLE kg_edge_sources (
    edge_id    BIGINT NOT NULL REFERENCES kg_edges (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    speaker_id TEXT NOT NULL,
    PRIMARY KEY (edge_id, message_id)
);
CREATE INDEX kg_edge_sources_message_idx ON kg_edge_sources (message_id);

-- A message deleted: edges it alone supported go, the others lose evidence.
CREATE FUNCTION kg_source_removed() RETURNS TRIGGER AS $$
BEGIN
    UPDATE kg_edges SET evidence_count = GREATEST(evidence_count - 1, 0) WHERE id = OLD.edge_id;
    DELETE FROM kg_edges e WHERE e.id = OLD.edge_id
        AND NOT EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.edge_id = e.id);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER kg_edge_source_removed
AFTER DELETE ON kg_edge_sources
FOR EACH ROW EXECUTE FUNCTION kg_source_removed();

-- Every admission-gate decision, with its reason (seed 001, 5.6 and 11).
CREATE TABLE kg_gate_log (
    id         BIGSERIAL PRIMARY KEY,
    scope      TEXT NOT NULL,
    message_id BIGINT REFERENCES messages (id) ON DELETE CASCADE,
    action     TEXT NOT NULL CHECK (action IN ('insert', 'aggregate', 'route_to_episodic')),
    reason     TEXT NOT NULL,
    score      REAL,
    payload    JSONB NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX kg_gate_log_scope_idx ON kg_gate_log (scope, decided_at);

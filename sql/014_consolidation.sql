-- Replay consolidates what the relational gate routed to episodic memory (issue 12):
-- a routed tuple is re-read each night until enough evidence admits it to the graph.
ALTER TABLE kg_gate_log ADD COLUMN consolidated_at TIMESTAMPTZ;
CREATE INDEX kg_gate_log_routed_idx ON kg_gate_log (scope, id)
    WHERE action = 'route_to_episodic' AND consolidated_at IS NULL;

-- A contradicted edge keeps its history: it loses confidence and says when it was contradicted.
ALTER TABLE kg_edges ADD COLUMN contradicted_at TIMESTAMPTZ;

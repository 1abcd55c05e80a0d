-- 028 an episode the graph has taken over can go (issue 30.1, "consolidation that a month shows").
-- Why: the dream re-read routed tuples and replayed episodes, but no episode ever left the store unless it
-- was trivia, so a month of dreaming left recall and the store where they were. The consolidation step now
-- marks an episode consolidated once every fact its message states is held by the graph on its own (said
-- again, rehearsed by replay, or superseded by a newer value); decay then lets it go after a while
-- unreinforced. The fact keeps its message as provenance (kg_edge_sources), so forgetting the message still
-- deletes the fact after its episode is gone.
-- first_dreamt_at: when a dream first held the episode. One-off chatter fades by the time the memory has held it
-- (since then, or since it was last reinforced), never by the history's calendar, so a history imported
-- today is not erased by its first night.
ALTER TABLE episodes ADD COLUMN consolidated_at TIMESTAMPTZ;
ALTER TABLE episodes ADD COLUMN first_dreamt_at TIMESTAMPTZ;
CREATE INDEX episodes_consolidated_idx ON episodes (scope, consolidated_at) WHERE consolidated_at IS NOT NULL;

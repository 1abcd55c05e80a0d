-- 006 trust and layers (issue 8): audiences, durable absorption, ownership in
-- the graph, per-server governance, and provenance for every copy of words.
-- Why: a private channel's memory surfaced in public channels; a crash lost
-- queued memory writes; two people's "my sister" became one node; admin
-- powers were global; forgetting a person left their words in proposals and
-- approved archetypes.

-- Sizes: ids and scopes are short; a 3,000-character id made an index row too
-- large (a traceback). NOT VALID: older rows could not exceed it anyway.
ALTER TABLE messages ADD CONSTRAINT messages_id_sizes CHECK (
    length(scope) <= 200 AND length(channel_id) <= 200 AND length(external_id) <= 200
    AND length(author_id) <= 200 AND length(author_name) <= 200) NOT VALID;

-- Visibility: NULL means everyone who can see the scope (a public channel, a
-- DM, the console); otherwise the channel whose audience may see it (for a
-- thread: its parent channel, since threads follow their parent).
ALTER TABLE messages ADD COLUMN visible_in TEXT;
-- A thread's parent channel, so deleting a channel also forgets its threads.
ALTER TABLE messages ADD COLUMN thread_parent_id TEXT;
-- Durable absorption: NULL until every memory layer has absorbed the message.
-- What existed before this migration counts as absorbed.
ALTER TABLE messages ADD COLUMN absorbed_at TIMESTAMPTZ;
UPDATE messages SET absorbed_at = stored_at;
CREATE INDEX messages_unabsorbed_idx ON messages (id) WHERE absorbed_at IS NULL AND NOT is_bot;
CREATE INDEX messages_channel_idx ON messages (channel_id);
CREATE INDEX messages_thread_parent_idx ON messages (thread_parent_id) WHERE thread_parent_id IS NOT NULL;

ALTER TABLE episodes ADD COLUMN visible_in TEXT;
-- Decay works by time since an episode was last reinforced (written, recalled,
-- replayed or pinned), never by how many times the cycle ran.
ALTER TABLE episodes ADD COLUMN last_reinforced_at TIMESTAMPTZ;
UPDATE episodes e SET visible_in = m.visible_in FROM messages m WHERE m.id = e.message_id;
UPDATE episodes SET last_reinforced_at = GREATEST(created_at, last_recalled_at, last_replayed_at);
ALTER TABLE episodes ALTER COLUMN last_reinforced_at SET NOT NULL;
CREATE INDEX episodes_scope_visible_idx ON episodes (scope, visible_in);

-- Ownership: "ana's sister" and "ben's sister" are two nodes. owner is '' for
-- shared (world) nodes, 'user:<id>' for a person's own things.
ALTER TABLE kg_nodes ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE kg_nodes DROP CONSTRAINT kg_nodes_scope_name_key;
ALTER TABLE kg_nodes ADD CONSTRAINT kg_nodes_scope_owner_name_key UNIQUE (scope, owner, name);
-- A fact is visible to an audience when one of its supporting messages is.
ALTER TABLE kg_edge_sources ADD COLUMN visible_in TEXT;
UPDATE kg_edge_sources s SET visible_in = m.visible_in FROM messages m WHERE m.id = s.message_id;

-- Per-server archetypes: NULL scope = global (seeded, or the owner's).
ALTER TABLE context_archetypes ADD COLUMN scope TEXT;
ALTER TABLE context_archetypes DROP CONSTRAINT context_archetypes_archetype_name_key;
CREATE UNIQUE INDEX context_archetypes_scope_name_idx ON context_archetypes (COALESCE(scope, ''), archetype_name);

-- A guild's own switch for an archetype (global or its own), with who set it.
CREATE TABLE archetype_overrides (
    scope        TEXT NOT NULL CHECK (scope <> ''),
    archetype_id UUID NOT NULL REFERENCES context_archetypes (id) ON DELETE CASCADE,
    active       BOOLEAN NOT NULL,
    set_by       TEXT NOT NULL,
    set_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, archetype_id)
);
CREATE TRIGGER archetype_overrides_changed
AFTER INSERT OR DELETE OR UPDATE ON archetype_overrides
FOR EACH STATEMENT EXECUTE FUNCTION notify_archetypes_changed();

-- Which messages an approved archetype's examples came from. Deleting such a
-- message removes its example (the centroid is then recomputed by the
-- invalidate_centroid trigger); an archetype left with none is deleted.
CREATE TABLE archetype_example_sources (
    archetype_id UUID NOT NULL REFERENCES context_archetypes (id) ON DELETE CASCADE,
    message_id   BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    example      TEXT NOT NULL,
    PRIMARY KEY (archetype_id, message_id)
);
CREATE INDEX archetype_example_sources_message_idx ON archetype_example_sources (message_id);

CREATE FUNCTION archetype_example_removed() RETURNS TRIGGER AS $$
BEGIN
    DELETE FROM context_archetypes a WHERE a.id = OLD.archetype_id
        AND a.example_messages <@ ARRAY[OLD.example];
    UPDATE context_archetypes SET example_messages = array_remove(example_messages, OLD.example)
        WHERE id = OLD.archetype_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER archetype_example_source_removed
AFTER DELETE ON archetype_example_sources
FOR EACH ROW EXECUTE FUNCTION archetype_example_removed();

-- Proposals: the scope they apply to (NULL: global), kinds registered by layers
-- (no fixed list), and an outbox: stored first, (re)posted while post_pending.
ALTER TABLE proposals DROP CONSTRAINT proposals_kind_check;
ALTER TABLE proposals ADD CONSTRAINT proposals_kind_check CHECK (kind ~ '^[a-z][a-z0-9_]{1,62}$');
ALTER TABLE proposals ADD COLUMN scope TEXT;
ALTER TABLE proposals ADD COLUMN post_pending BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE proposals ADD COLUMN posted_at TIMESTAMPTZ;
UPDATE proposals SET scope = evidence ->> 'scope', post_pending = (posted_ref IS NULL AND status = 'pending');
CREATE INDEX proposals_outbox_idx ON proposals (id) WHERE post_pending;
CREATE INDEX proposals_scope_idx ON proposals (scope, status);

-- Which messages a proposal quotes or cites. Deleting one redacts its words
-- from the examples and its entry from the evidence, and queues a re-post.
CREATE TABLE proposal_sources (
    proposal_id BIGINT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    message_id  BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    example     TEXT,
    PRIMARY KEY (proposal_id, message_id)
);
CREATE INDEX proposal_sources_message_idx ON proposal_sources (message_id);

CREATE FUNCTION proposal_source_removed() RETURNS TRIGGER AS $$
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
        post_pending = (p.posted_ref IS NOT NULL OR p.status = 'pending')
    WHERE p.id = OLD.proposal_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER proposal_source_removed
AFTER DELETE ON proposal_sources
FOR EACH ROW EXECUTE FUNCTION proposal_source_removed();

-- Dream runs for one guild (NULL: every scope, the nightly run).
ALTER TABLE dream_runs ADD COLUMN scope TEXT;

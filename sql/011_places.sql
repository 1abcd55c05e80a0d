-- 011 places and procedures (issue 13, seed 001 SMPD): a map of the server and a library of what worked.
-- Why: nothing remembered where things are discussed or how problems were solved. A place is a channel (or
-- thread) with a topic code (the centroid of what is said there; a busy channel may hold several places);
-- moves of one person between places within a time window are the transitions (path integration), gated
-- (seed 5.6: insert, aggregate, block_new_edge) and logged with their reason; A* plans over them. A
-- how-to exchange the person confirmed worked becomes a macro (signature, steps, success statistics).
-- Every row carries its scope, its visibility and the messages it came from: forgetting a message removes
-- what it alone built (the layers recompute centroids, edges and macros from what is left).

-- The plan field: how many "where this is discussed" routes the places layer adds (0: none), like triple_depth.
ALTER TABLE context_archetypes ADD COLUMN place_depth INT NOT NULL DEFAULT 0 CHECK (place_depth BETWEEN 0 AND 3);
UPDATE context_archetypes SET place_depth = 1
WHERE scope IS NULL AND archetype_name IN ('technical_debugging', 'general_question');
DROP TRIGGER archetypes_changed ON context_archetypes;
CREATE TRIGGER archetypes_changed
AFTER INSERT OR DELETE OR UPDATE OF archetype_name, example_messages, context_turns,
    context_vectors, similarity_threshold, triple_depth, place_depth, active
ON context_archetypes
FOR EACH STATEMENT EXECUTE FUNCTION notify_archetypes_changed();

CREATE TABLE places (
    id                BIGSERIAL PRIMARY KEY,
    scope             TEXT NOT NULL CHECK (scope <> ''),
    visible_in        TEXT,                  -- as the channel's messages: NULL is everyone in the scope
    channel_id        TEXT NOT NULL,         -- the channel or thread
    parent_channel_id TEXT,                  -- a thread's parent channel
    centroid          vector(384) NOT NULL,  -- the topic code: mean of its weighted messages' vectors
    weighted          INT NOT NULL DEFAULT 0 CHECK (weighted >= 0),   -- messages in the centroid
    label             TEXT NOT NULL DEFAULT '',  -- its most frequent content words
    messages          INT NOT NULL DEFAULT 0 CHECK (messages >= 0),
    questions         INT NOT NULL DEFAULT 0 CHECK (questions >= 0),
    resolutions       INT NOT NULL DEFAULT 0 CHECK (resolutions >= 0),
    created_at        TIMESTAMPTZ NOT NULL,
    last_seen         TIMESTAMPTZ NOT NULL
);
CREATE INDEX places_channel_idx ON places (scope, channel_id);

-- Which place each person message was assigned to, with its vector (centroids are recomputed from these).
CREATE TABLE place_messages (
    message_id  BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    place_id    BIGINT NOT NULL REFERENCES places (id) ON DELETE CASCADE,
    scope       TEXT NOT NULL,
    author_id   TEXT NOT NULL,
    embedding   vector(384) NOT NULL,
    weight      REAL NOT NULL CHECK (weight BETWEEN 0 AND 1),  -- 0: too short to shape the topic code
    question    BOOLEAN NOT NULL,
    resolution  BOOLEAN NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX place_messages_place_idx ON place_messages (place_id);
CREATE INDEX place_messages_author_idx ON place_messages (scope, author_id, created_at DESC);

-- Transitions: aggregates of the moves the gate let through (rebuilt from place_moves after forgetting).
CREATE TABLE place_edges (
    id         BIGSERIAL PRIMARY KEY,
    scope      TEXT NOT NULL CHECK (scope <> ''),
    visible_in TEXT,                         -- the narrowest of its two places
    src        BIGINT NOT NULL REFERENCES places (id) ON DELETE CASCADE,
    dst        BIGINT NOT NULL REFERENCES places (id) ON DELETE CASCADE,
    moves      INT NOT NULL CHECK (moves >= 1),
    successes  INT NOT NULL DEFAULT 0 CHECK (successes >= 0),
    cost_s     REAL NOT NULL CHECK (cost_s >= 0),   -- mean seconds between leaving src and speaking in dst
    last_seen  TIMESTAMPTZ NOT NULL,
    UNIQUE (src, dst),
    CHECK (src <> dst)
);

-- Every observed move and the spatial gate's decision with its reason (the seed's provenance log; the
-- gate counters of /memory stats are counts of these rows, so they follow forgetting).
CREATE TABLE place_moves (
    id              BIGSERIAL PRIMARY KEY,
    scope           TEXT NOT NULL CHECK (scope <> ''),
    visible_in      TEXT,
    author_id       TEXT NOT NULL,
    from_message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    message_id      BIGINT NOT NULL UNIQUE REFERENCES messages (id) ON DELETE CASCADE,
    src             BIGINT NOT NULL REFERENCES places (id) ON DELETE CASCADE,
    dst             BIGINT NOT NULL REFERENCES places (id) ON DELETE CASCADE,
    action          TEXT NOT NULL CHECK (action IN ('insert', 'aggregate', 'block_new_edge')),
    reason          TEXT NOT NULL,
    cost_s          REAL NOT NULL CHECK (cost_s >= 0),
    -- the message that said the visit this move began ended well ("thanks, that worked"); NULL: not (yet)
    success_message_id BIGINT REFERENCES messages (id) ON DELETE SET NULL,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX place_moves_trajectory_idx ON place_moves (scope, author_id, created_at DESC);
CREATE INDEX place_moves_edge_idx ON place_moves (src, dst);
CREATE INDEX place_moves_from_idx ON place_moves (from_message_id);
CREATE INDEX place_moves_success_idx ON place_moves (success_message_id);

-- Procedures distilled from confirmed exchanges.
CREATE TABLE macros (
    id          BIGSERIAL PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope <> ''),
    visible_in  TEXT,
    channel_id  TEXT NOT NULL,               -- where it was worked out
    signature   TEXT NOT NULL,               -- what it solves (the first problem's words)
    embedding   vector(384) NOT NULL,        -- mean of its problems' vectors
    successes   INT NOT NULL DEFAULT 0 CHECK (successes >= 0),
    failures    INT NOT NULL DEFAULT 0 CHECK (failures >= 0),
    strength    REAL NOT NULL DEFAULT 1 CHECK (strength BETWEEN 0 AND 1),  -- success aging (dream)
    uses        INT NOT NULL DEFAULT 0 CHECK (uses >= 0),
    created_at  TIMESTAMPTZ NOT NULL,
    last_update TIMESTAMPTZ NOT NULL
);
CREATE INDEX macros_scope_idx ON macros (scope, visible_in);

CREATE TABLE macro_problems (
    macro_id   BIGINT NOT NULL REFERENCES macros (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    embedding  vector(384) NOT NULL,
    PRIMARY KEY (macro_id, message_id)
);
CREATE INDEX macro_problems_message_idx ON macro_problems (message_id);

CREATE TABLE macro_steps (
    id         BIGSERIAL PRIMARY KEY,
    macro_id   BIGINT NOT NULL REFERENCES macros (id) ON DELETE CASCADE,
    position   INT NOT NULL,
    text       TEXT NOT NULL CHECK (text <> ''),
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE
);
CREATE INDEX macro_steps_macro_idx ON macro_steps (macro_id, position);
CREATE INDEX macro_steps_message_idx ON macro_steps (message_id);

-- Confirmations and failures: the macro's statistics are counts of these.
CREATE TABLE macro_outcomes (
    macro_id   BIGINT NOT NULL REFERENCES macros (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    success    BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (macro_id, message_id)
);
CREATE INDEX macro_outcomes_message_idx ON macro_outcomes (message_id);

-- Which macros reached the prompt for which message (a later "that worked" or "still broken" counts for them).
CREATE TABLE macro_uses (
    macro_id   BIGINT NOT NULL REFERENCES macros (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    author_id  TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (macro_id, message_id)
);
CREATE INDEX macro_uses_author_idx ON macro_uses (scope, channel_id, author_id, created_at DESC);

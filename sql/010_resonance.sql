-- 010 resonance (issue 11, seed 000 "Santa Klaus" + "ragbrain"): the bot's replies as moments, with how they went.
-- Why: the engine could bend its sampling toward chosen tokens, but nothing remembered which of the bot's
-- replies went well. Every reply becomes a moment with the generation's metrics and a quality learnt from
-- people (reactions, replies, carrying on, deletes, /good and /bad); resonant recall picks the moments that
-- match a new message and boosts their words. A moment is derived from the person's message and the bot's
-- reply (ON DELETE CASCADE on both); its text is never copied: it is read from the reply when recalled.

CREATE TABLE resonance_moments (
    id             BIGSERIAL PRIMARY KEY,
    message_id     BIGINT NOT NULL UNIQUE REFERENCES messages (id) ON DELETE CASCADE,  -- the person's message
    -- the bot's reply; NULL once the reply alone was deleted (the moment keeps its metrics, its low quality
    -- and no words, so "how did replies like this go" still counts it)
    reply_id       BIGINT UNIQUE REFERENCES messages (id) ON DELETE CASCADE,
    scope          TEXT NOT NULL,
    visible_in     TEXT,                 -- as the message: NULL is everyone in the scope
    channel_id     TEXT NOT NULL,
    words          TEXT[] NOT NULL,      -- the reply's distinct content words (token overlap and boosts)
    themes         TEXT[] NOT NULL,      -- stems of the turn's content words and '@archetype'
    archetype      TEXT,
    surprise       REAL,                 -- the generation's mean surprise, nats (NULL: not known)
    entropy        REAL,                 -- the generation's mean token entropy, nats (NULL: not known)
    novelty        REAL NOT NULL CHECK (novelty BETWEEN 0 AND 1),
    arousal        REAL NOT NULL CHECK (arousal BETWEEN 0 AND 1),
    reply_len_norm REAL NOT NULL CHECK (reply_len_norm BETWEEN 0 AND 1),
    unique_ratio   REAL NOT NULL CHECK (unique_ratio BETWEEN 0 AND 1),
    quality        REAL NOT NULL DEFAULT 0.5 CHECK (quality BETWEEN 0 AND 1),
    ups            REAL NOT NULL DEFAULT 0,
    downs          REAL NOT NULL DEFAULT 0,
    uses           INT NOT NULL DEFAULT 0,
    last_used_at   TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    deleted_at     TIMESTAMPTZ          -- when the reply was deleted
);
CREATE INDEX resonance_moments_recent_idx ON resonance_moments (scope, created_at DESC, id DESC);
CREATE INDEX resonance_moments_channel_idx ON resonance_moments (scope, channel_id, created_at DESC);

-- What people did about a moment. Quality is (1 + ups) / (2 + ups + downs) over these rows (a Beta(1, 1) prior:
-- 0.5 until someone says something), recomputed whenever one is added or removed.
CREATE TABLE resonance_signals (
    id          BIGSERIAL PRIMARY KEY,
    moment_id   BIGINT NOT NULL REFERENCES resonance_moments (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('reaction', 'reply', 'carry_on', 'deleted', 'rating')),
    actor_id    TEXT,                    -- who (a reaction is theirs to take back); NULL for a deletion
    detail      TEXT NOT NULL DEFAULT '',  -- the emoji
    weight      REAL NOT NULL CHECK (weight BETWEEN -5 AND 5),  -- > 0 up, < 0 down
    message_id  BIGINT REFERENCES messages (id) ON DELETE CASCADE,  -- the person's message that carried it
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE NULLS NOT DISTINCT (moment_id, kind, actor_id, detail)
);
CREATE INDEX resonance_signals_actor_idx ON resonance_signals (actor_id);
CREATE INDEX resonance_signals_message_idx ON resonance_signals (message_id);

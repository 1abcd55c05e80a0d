-- 009 persona (issue 10, seed 002 Sonality): the bot's personality per scope, changed only on evidence.
-- Why: the persona was a fixed setting; now each scope (and each restricted channel's audience) has a
-- versioned state (snapshot, opinions with belief metadata, staged updates), every scored person message
-- is logged with the features that scored it, and the state is the fold of that log, so forgetting a
-- message removes its evidence (ON DELETE CASCADE) and the layer recomputes what it supported.

CREATE TABLE persona_evidence (
    id                 BIGSERIAL PRIMARY KEY,
    message_id         BIGINT NOT NULL UNIQUE REFERENCES messages (id) ON DELETE CASCADE,
    scope              TEXT NOT NULL,
    visible_in         TEXT,                 -- as the message: NULL is everyone in the scope
    epoch              INT NOT NULL,         -- a reset starts a new epoch; earlier evidence no longer counts
    interaction        INT NOT NULL,         -- the state's interaction count after this message
    version            INT NOT NULL,         -- the first state version this message shaped
    score              REAL NOT NULL CHECK (score BETWEEN 0 AND 1),
    reasoning_type     TEXT NOT NULL,
    source_reliability TEXT NOT NULL,
    novelty            REAL NOT NULL CHECK (novelty BETWEEN 0 AND 1),
    topics             JSONB NOT NULL,       -- [[phrase, canonical topic, direction], ...]
    features           JSONB NOT NULL,       -- what produced the score (similarities, cue counts, stance)
    scorer             TEXT NOT NULL,
    embedding          vector(384) NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX persona_evidence_state_idx ON persona_evidence (scope, (COALESCE(visible_in, '')), epoch, interaction);

CREATE TABLE persona_versions (
    id          BIGSERIAL PRIMARY KEY,
    scope       TEXT NOT NULL,
    visible_in  TEXT,                        -- NULL: the scope's public persona; else a restricted channel's
    version     INT NOT NULL,
    state       JSONB NOT NULL,
    reason      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX persona_versions_idx ON persona_versions (scope, (COALESCE(visible_in, '')), version);

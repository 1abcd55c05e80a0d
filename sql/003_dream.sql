-- 003 dream cycle and governance (issue 4, seeds 001 and 003).
-- Why: the nightly cycle records every run; every change it wants to make to
-- the bot's own behaviour becomes a proposal that humans vote on, and nothing
-- is applied without an approval on record.

-- The message vector travels with its classification, so the archetype
-- analysis can cluster poorly matched messages without re-embedding them.
ALTER TABLE archetype_matches ADD COLUMN embedding vector(384);

CREATE TABLE dream_runs (
    id            BIGSERIAL PRIMARY KEY,
    trigger       TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual')),
    scheduled_for TIMESTAMPTZ,             -- the cron slot, for scheduled runs
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at   TIMESTAMPTZ,
    status        TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'ok', 'partial', 'failed')),
    report        JSONB NOT NULL DEFAULT '{}'::jsonb
);
-- Several bot processes on one database: one run per scheduled slot.
CREATE UNIQUE INDEX dream_runs_slot_idx ON dream_runs (scheduled_for) WHERE trigger = 'schedule';

CREATE TABLE proposals (
    id            BIGSERIAL PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('new_archetype', 'edit_archetype')),
    status        TEXT NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'applied')),
    title         TEXT NOT NULL,
    payload       JSONB NOT NULL,          -- what would be applied
    rationale     TEXT NOT NULL,
    evidence      JSONB NOT NULL,          -- message ids and their similarities
    centroid      vector(384),             -- to recognise the same idea proposed again
    dream_run_id  BIGINT REFERENCES dream_runs (id) ON DELETE SET NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at    TIMESTAMPTZ NOT NULL,
    decided_at    TIMESTAMPTZ,
    decided_by    TEXT,
    posted_ref    TEXT,                    -- where it was posted (a Discord message id)
    applied_archetype_id UUID REFERENCES context_archetypes (id) ON DELETE SET NULL
);
CREATE INDEX proposals_status_idx ON proposals (status, created_at);

CREATE TABLE proposal_votes (
    proposal_id BIGINT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    voter_id    TEXT NOT NULL,
    voter_name  TEXT NOT NULL,
    vote        TEXT NOT NULL CHECK (vote IN ('approve', 'reject')),
    voted_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (proposal_id, voter_id)
);

-- Episodic replay and decay bookkeeping.
ALTER TABLE episodes ADD COLUMN last_replayed_at TIMESTAMPTZ;
ALTER TABLE episodes ADD COLUMN replay_count INT NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN merged_count INT NOT NULL DEFAULT 0;

-- LoRA adapters distilled by the dream cycle from one scope's public memory (issue 12, item 2).
-- An adapter is trained on one scope's messages and applies only to that scope's replies;
-- adapter_sources records every message whose words went into it, so forgetting any of
-- them taints the adapter (its files are deleted and it is never used again).
CREATE TABLE adapters (
    id           BIGSERIAL PRIMARY KEY,
    scope        TEXT NOT NULL CHECK (scope <> ''),
    status       TEXT NOT NULL CHECK (status IN ('proposed', 'active', 'retired', 'rolled_back', 'rejected',
                                                 'failed', 'tainted')),
    path         TEXT NOT NULL,                 -- the adapter's directory (peft files and a llama.cpp GGUF)
    base_model   TEXT NOT NULL,                 -- what it was trained on
    metrics      JSONB NOT NULL DEFAULT '{}',   -- the evaluation that gated it (EM, perplexity, time, steps)
    proposal_id  BIGINT REFERENCES proposals (id) ON DELETE SET NULL,
    replaced_id  BIGINT REFERENCES adapters (id) ON DELETE SET NULL,  -- the adapter it replaced (rollback)
    trained_through BIGINT,                     -- the scope's newest message id when its mix was gathered
    created_at   TIMESTAMPTZ NOT NULL,
    activated_at TIMESTAMPTZ,
    tainted_at   TIMESTAMPTZ,
    note         TEXT
);
CREATE UNIQUE INDEX adapters_one_active_idx ON adapters (scope) WHERE status = 'active';
CREATE INDEX adapters_scope_idx ON adapters (scope, created_at);

-- No foreign key to messages: a forgotten message must taint the adapter, not vanish from its record.
CREATE TABLE adapter_sources (
    adapter_id BIGINT NOT NULL REFERENCES adapters (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL,
    PRIMARY KEY (adapter_id, message_id)
);
CREATE INDEX adapter_sources_message_idx ON adapter_sources (message_id);

-- 001 core: the conversation log and the episodic store.
-- Why: every incoming message is persisted before anything else happens, and
-- every memory keeps the ids of the messages it came from, so deleting a
-- message (ON DELETE CASCADE) deletes what was derived from it.

CREATE EXTENSION IF NOT EXISTS vector;

-- Raw conversation: Discord messages, console lines, imported history, and
-- the bot's own replies. `scope` is the isolation boundary (a guild id, or
-- 'dm:<user id>', or a console scope); every query filters on it.
CREATE TABLE messages (
    id              BIGSERIAL PRIMARY KEY,
    scope           TEXT NOT NULL CHECK (scope <> ''),
    source          TEXT NOT NULL CHECK (source IN ('discord', 'console', 'import')),
    external_id     TEXT NOT NULL,          -- Discord snowflake, import id, or console uuid
    channel_id      TEXT NOT NULL,
    author_id       TEXT NOT NULL,
    author_name     TEXT NOT NULL,
    is_bot          BOOLEAN NOT NULL DEFAULT false,
    content         TEXT NOT NULL,
    -- A bot reply is derived from the message it answers: deleting that message deletes the reply.
    derived_from_id BIGINT REFERENCES messages (id) ON DELETE CASCADE,
    reply_to_external TEXT,                 -- the id a person replied to, as given (no cascade)
    created_at      TIMESTAMPTZ NOT NULL,
    edited_at       TIMESTAMPTZ,
    stored_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (scope, source, channel_id, external_id)
);
CREATE INDEX messages_conversation_idx ON messages (scope, channel_id, created_at DESC, id DESC);
CREATE INDEX messages_author_idx ON messages (scope, author_id);
CREATE INDEX messages_derived_from_idx ON messages (derived_from_id);

-- Episodes: a user turn with the bot's reply, or one imported message.
-- The key is the user message's MiniLM embedding (computed once per message).
CREATE TABLE episodes (
    id               BIGSERIAL PRIMARY KEY,
    scope            TEXT NOT NULL CHECK (scope <> ''),
    channel_id       TEXT NOT NULL,
    author_id        TEXT NOT NULL,
    message_id       BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    reply_message_id BIGINT REFERENCES messages (id) ON DELETE CASCADE,
    content          TEXT NOT NULL,
    embedding        vector(384) NOT NULL,
    surprise         REAL,                  -- mean -log p of the reply, nats/token
    novelty          REAL,                  -- 1 - max cosine to the scope's episodes at write time
    salience         REAL NOT NULL DEFAULT 0,
    pinned           BOOLEAN NOT NULL DEFAULT false,
    created_at       TIMESTAMPTZ NOT NULL,
    last_recalled_at TIMESTAMPTZ,
    recall_count     INT NOT NULL DEFAULT 0,
    UNIQUE (message_id)
);
CREATE INDEX episodes_scope_idx ON episodes (scope, created_at DESC);
CREATE INDEX episodes_reply_idx ON episodes (reply_message_id);
CREATE INDEX episodes_embedding_idx ON episodes USING hnsw (embedding vector_cosine_ops);

-- 017 what was forgotten stays forgotten (trust): forgetting a message, a channel or a person deletes
-- everything derived from them, but re-importing an old export would bring them back. So each
-- forgetting of a message or a person leaves a tombstone the importer checks: a digest of what was
-- forgotten (never the id itself, nor any content) and when. Kinds, hashed with the scope
-- (memory.provenance.forgotten_digest): a message (its channel and id), a person (their id). A
-- person's tombstone covers what they said up to ``forgotten_at``; what they say later is new. A
-- channel forgotten as a whole leaves none (whoever runs the bot forgot it, to import it again as
-- private, say). No ``scope`` column, so forgetting a whole DM scope keeps its tombstones.
CREATE TABLE forgotten (
    digest       TEXT PRIMARY KEY CHECK (length(digest) = 64),
    forgotten_at TIMESTAMPTZ NOT NULL
);

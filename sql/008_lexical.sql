-- Lexical search over the raw message log (issue 9): every stored message,
-- whether or not the write gate made an episode of it, is findable by its
-- words and by who said it. English stemming and stop words; the speaker's
-- name is part of the indexed text.
ALTER TABLE messages ADD COLUMN search_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', author_name || ' ' || content)) STORED;
CREATE INDEX messages_search_idx ON messages USING gin (search_tsv);

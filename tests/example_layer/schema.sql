-- The example layer's table: one note per absorbed person message.
-- A layer shipped outside the project installs its own tables (MemoryLayer.install) rather than taking a
-- number in sql/; so this is idempotent and runs at every start. The note is derived from its message,
-- so deleting the message (forgetting it) deletes the note by cascade; the scope column lets forgetting a
-- whole DM scope find it too.
CREATE TABLE IF NOT EXISTS example_notes (
    message_id BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL CHECK (scope <> ''),
    visible_in TEXT,  -- the restricted channel it was said in (NULL: public in its scope)
    words      INT NOT NULL,
    noted_at   TIMESTAMPTZ NOT NULL,
    dreamt_at  TIMESTAMPTZ  -- when the dream's tally last counted it
);
CREATE INDEX IF NOT EXISTS example_notes_scope_idx ON example_notes (scope, message_id DESC);

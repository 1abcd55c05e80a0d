-- 024 how the bot takes part in each channel, and who does not want to be remembered (issue 29.2).
-- Why: the bot only remembered what was said to it, so a server's shared memory started empty and
-- stayed thin. A server's admins now choose, per channel, whether the bot answers when addressed
-- (mention, the default), answers everything (chat) or never answers (quiet), and separately
-- whether it remembers the conversation it does not answer (remember). Each choice keeps who made
-- it and when. A thread follows its parent channel's row. No row: the default (mention, or chat in
-- HIPPOBOT_DISCORD_ALLOWED_CHANNELS; not remembered).
CREATE TABLE channel_settings (
    scope          TEXT NOT NULL CHECK (scope <> ''),
    channel_id     TEXT NOT NULL CHECK (channel_id <> ''),
    mode           TEXT CHECK (mode IN ('mention', 'chat', 'quiet')),  -- NULL: never set here
    mode_set_by    TEXT,
    mode_set_at    TIMESTAMPTZ,
    remember       BOOLEAN NOT NULL DEFAULT false,
    memory_set_by  TEXT,
    memory_set_at  TIMESTAMPTZ,
    PRIMARY KEY (scope, channel_id),
    CHECK ((mode IS NULL) = (mode_set_by IS NULL)),
    CHECK ((memory_set_by IS NULL) = (memory_set_at IS NULL))
);

-- A person who opted out of being remembered in a server: nothing they say there is stored. Kept as a
-- digest of (scope, person) like the tombstones of 017, so the list holds no one's id (forgetting a
-- person leaves their opt-out standing, and the table still names nobody). Opting back in deletes the row.
CREATE TABLE memory_optouts (
    scope          TEXT NOT NULL CHECK (scope <> ''),
    digest         TEXT NOT NULL CHECK (length(digest) = 64),
    opted_out_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, digest)
);

-- 025 a dream channel per server (issue 30.3).
-- Why: there was one dream channel for the whole bot (HIPPOBOT_DREAM_CHANNEL_ID) while votes are per
-- server, so a second server's proposals landed in the first server's channel, where none of its own
-- approvers could vote. Each server's admins now choose their own with /dream channel set; a server's
-- proposals and digests go there only. The row keeps who chose it and when; /dream channel clear or
-- deleting the channel deletes it. No row: the server's proposals wait in the outbox (or, in the server
-- that holds HIPPOBOT_DREAM_CHANNEL_ID, go to that channel, as before).
CREATE TABLE dream_channels (
    scope       TEXT PRIMARY KEY CHECK (scope <> ''),
    channel_id  TEXT NOT NULL CHECK (channel_id <> ''),
    set_by      TEXT NOT NULL,
    set_at      TIMESTAMPTZ NOT NULL
);

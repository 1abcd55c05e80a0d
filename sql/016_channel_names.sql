-- 016 channel names (issue 13): what a channel was called when a message was said in it.
-- Why: a place's topic code is learned from what is said there, and a question about a topic the
-- history hardly mentions lands on a neighbouring topic's channel. The channel's own name (#docker,
-- #sourdough) says what it is for; the planner blends it into a place's fit. Kept on the message
-- (not in a table of its own) so it has the message's provenance and audience: forgetting a
-- channel's messages forgets its name, and a restricted channel's name is read only with its places.
-- NULL: unknown (a DM, the console, an import that names only ids).
ALTER TABLE messages ADD COLUMN channel_name TEXT
    CHECK (channel_name IS NULL OR (channel_name <> '' AND length(channel_name) <= 200));

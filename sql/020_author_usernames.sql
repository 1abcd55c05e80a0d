-- 020 author usernames (issue 32.8): the account name a message's author had, beside their display name.
-- Why: people know each other on Discord by both (username `lea_climbs`, display name `Léa`); a
-- DiscordChatExporter file gives both, the live bot sees both, and `hippobot forget --person` must find a
-- person by either. Kept on the message, like author_name, so forgetting the message forgets it.
-- NULL: unknown (the console, a JSON Lines import that gives one name, messages stored before this).
ALTER TABLE messages ADD COLUMN author_username TEXT
    CHECK (author_username IS NULL OR (author_username <> '' AND length(author_username) <= 200));

-- 018 the bot's own words are not what people said (issue 28): an episode held the person's message and
-- then the bot's reply, so a recalled episode put the bot's earlier inventions back into the prompt as
-- memory, and it repeated them. From now on an episode's text is the person's message alone (the reply
-- stays in the log, the recent turns, and the episode's reply_message_id for provenance); this rewrites
-- the episodes written before.
UPDATE episodes e
   SET content = m.author_name || ': ' || m.content
  FROM messages m
 WHERE m.id = e.message_id AND e.reply_message_id IS NOT NULL;

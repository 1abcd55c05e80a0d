-- 032 a seventh initial archetype: small talk with the bot, which recalls no memory.
-- Why (P9, P10, black-box probes): "how are you?" sat nearest preference_exploration (12 memories), "tell me a
-- joke" nearest general_question, so their prompts held people's memories and the reader answered from them:
-- "Working as a nurse at St. Mary's hospital." to "how are you?", someone's broken wrist as a joke, each shown
-- with its source. Greetings, how-are-yous, jokes and questions about the bot's own day are the model's to
-- answer from the conversation itself: the recent turns only, no episodes, no facts. A question that asks about
-- people or things (not only about the bot) is still planned by the nearest archetype that recalls memory
-- (memory.archetypes.ArchetypeRouter.classify, ``asks``).
-- A global archetype of that name someone already made stays theirs.
INSERT INTO context_archetypes (archetype_name, description, example_messages,
    context_turns, context_vectors, similarity_threshold, triple_depth, created_by, approved_by)
SELECT 'small_talk', 'Small talk with the bot: greetings, how it is doing, jokes, its own day',
       ARRAY['How are you?',
       'Hey, how''s it going?',
       'Good morning!',
       'What''s up?',
       'Tell me a joke',
       'How was your day?',
       'What have you been up to?',
       'Say something funny',
       'Good night, talk tomorrow'],
 6, 0, 0.9, 0, 'human', 'system_init'
WHERE NOT EXISTS (SELECT 1 FROM context_archetypes WHERE scope IS NULL AND archetype_name = 'small_talk');

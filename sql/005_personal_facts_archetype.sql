-- 005 a sixth initial archetype: questions about the facts of one's own life.
-- Why: "what's my cat's name?" or "where does my sister live?" matched
-- simple_continuation (triple depth 0) or general_question best, so the
-- knowledge graph, which holds exactly these facts, was never consulted.
INSERT INTO context_archetypes (archetype_name, description, example_messages,
    context_turns, context_vectors, similarity_threshold, triple_depth, created_by, approved_by)
VALUES ('personal_facts', 'User asking about facts of their own life: people, pets, places, work, belongings',
 ARRAY['What is my dog called?',
       'Where does my brother live?',
       'What is my wife''s job?',
       'How old is my son?',
       'What car do I drive?',
       'Which city did I grow up in?',
       'What are my kids'' names?'],
 6, 8, 0.65, 2, 'human', 'system_init')
ON CONFLICT (archetype_name) DO NOTHING;

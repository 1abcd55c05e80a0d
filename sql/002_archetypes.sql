-- 002 context archetypes (seed 003): message -> context configuration by
-- embedding centroids, stored as data so that the dream cycle can propose new
-- ones and humans approve them without a code change.

CREATE TABLE context_archetypes (
    id                   UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    archetype_name       TEXT UNIQUE NOT NULL CHECK (archetype_name ~ '^[a-z][a-z0-9_]{1,62}$'),
    description          TEXT,
    example_messages     TEXT[] NOT NULL CHECK (cardinality(example_messages) >= 1),
    centroid_embedding   vector(384),       -- cache; NULL means "recompute from the examples"
    context_turns        INT NOT NULL CHECK (context_turns BETWEEN 1 AND 20),
    context_vectors      INT NOT NULL CHECK (context_vectors BETWEEN 0 AND 15),
    similarity_threshold FLOAT NOT NULL CHECK (similarity_threshold BETWEEN 0.5 AND 0.9),
    triple_depth         INT NOT NULL CHECK (triple_depth BETWEEN 0 AND 3),
    active               BOOLEAN NOT NULL DEFAULT true,
    created_by           TEXT,              -- 'human' or 'ai_dream_cycle'
    approved_by          TEXT,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    match_count          INT NOT NULL DEFAULT 0,
    avg_similarity       FLOAT
);
CREATE INDEX idx_active_archetypes ON context_archetypes (active) WHERE active = true;

-- Editing the examples invalidates the cached centroid.
CREATE FUNCTION invalidate_centroid() RETURNS TRIGGER AS $$
BEGIN
    IF OLD.example_messages IS DISTINCT FROM NEW.example_messages THEN
        NEW.centroid_embedding = NULL;
        NEW.updated_at = now();
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER invalidate_centroid_on_update
BEFORE UPDATE ON context_archetypes
FOR EACH ROW EXECUTE FUNCTION invalidate_centroid();

-- Tell running bots to reload their cache at once (they also poll every 60 s).
-- Not fired by centroid or statistics updates, which the bots make themselves.
CREATE FUNCTION notify_archetypes_changed() RETURNS TRIGGER AS $$
BEGIN
    PERFORM pg_notify('hippobot_archetypes', TG_OP);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER archetypes_changed
AFTER INSERT OR DELETE OR UPDATE OF archetype_name, example_messages, context_turns,
    context_vectors, similarity_threshold, triple_depth, active
ON context_archetypes
FOR EACH STATEMENT EXECUTE FUNCTION notify_archetypes_changed();

-- Every classification, for the dream cycle's archetype analysis. The best
-- archetype is logged even when its similarity was too low to use its plan.
CREATE TABLE archetype_matches (
    id           BIGSERIAL PRIMARY KEY,
    scope        TEXT NOT NULL CHECK (scope <> ''),
    message_id   BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    archetype_id UUID REFERENCES context_archetypes (id) ON DELETE SET NULL,
    similarity   REAL NOT NULL,
    used_default BOOLEAN NOT NULL,
    matched_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (message_id)
);
CREATE INDEX archetype_matches_time_idx ON archetype_matches (matched_at);
CREATE INDEX archetype_matches_archetype_idx ON archetype_matches (archetype_id, matched_at);

-- The five initial archetypes of seed 003, with a few more examples each so
-- that their centroids sit nearer to how people actually phrase these.
INSERT INTO context_archetypes (archetype_name, description, example_messages,
    context_turns, context_vectors, similarity_threshold, triple_depth, created_by, approved_by)
VALUES
('technical_debugging', 'User needs help debugging code or solving technical issues',
 ARRAY['Why isn''t this function working?',
       'I''m getting an error in my code',
       'Can you help me debug this?',
       'This keeps throwing an exception',
       'Something is wrong with my implementation',
       'My script crashes with a stack trace when I run it',
       'The build fails and I don''t understand the compiler error'],
 12, 3, 0.85, 1, 'human', 'system_init'),
('preference_exploration', 'User asking about their preferences, likes, or interests',
 ARRAY['What are my favorite hobbies?',
       'What do I like to do?',
       'Tell me about my interests',
       'What foods do I enjoy?',
       'What kind of music do I prefer?',
       'Which movies would I probably like?'],
 5, 12, 0.6, 2, 'human', 'system_init'),
('simple_continuation', 'Simple acknowledgments or short responses',
 ARRAY['Thanks!', 'Got it', 'Ok cool', 'Nice', 'Awesome', 'Sounds good', 'Perfect', 'Alright'],
 2, 0, 0.7, 0, 'human', 'system_init'),
('memory_recall', 'User asking about past conversations or information',
 ARRAY['Remember when we talked about...?',
       'You mentioned earlier that...',
       'What did I say about...?',
       'Do you recall our discussion on...?',
       'Didn''t we discuss this before?',
       'What did I tell you last week?'],
 15, 6, 0.75, 2, 'human', 'system_init'),
('general_question', 'General questions or requests for information',
 ARRAY['How does X work?',
       'Can you explain Y?',
       'What is Z?',
       'Tell me about...',
       'I want to learn about...',
       'How do airplanes stay in the air?',
       'Explain the difference between weather and climate',
       'Why is the sky blue?',
       'Who wrote Pride and Prejudice?',
       'What causes earthquakes?',
       'How does the heart pump blood through the body?'],
 8, 6, 0.7, 1, 'human', 'system_init');

-- 023 the plan's word budget for recalled episodes (issue 33.1: the same recall in fewer words).
-- Why: every recalled episode came with a turn either side, so recall's top 10 carried ~700-870 words and a
-- memory-backed reply waited seconds for its first token. The episodes layer now shows a hit's own turn and
-- only the neighbours likely to carry the answer, and stops at a budget of words; an archetype may set its
-- own (a chat that needs more context, a quick question less). NULL: the memory's default budget
-- (HybridConfig.word_budget, chosen on the dev splits by bench/memory_eval.py --words-curve).
ALTER TABLE context_archetypes
    ADD COLUMN memory_words INT CHECK (memory_words IS NULL OR memory_words BETWEEN 0 AND 4000);
DROP TRIGGER archetypes_changed ON context_archetypes;
CREATE TRIGGER archetypes_changed
AFTER INSERT OR DELETE OR UPDATE OF archetype_name, example_messages, context_turns,
    context_vectors, similarity_threshold, triple_depth, place_depth, memory_words, active
ON context_archetypes
FOR EACH STATEMENT EXECUTE FUNCTION notify_archetypes_changed();

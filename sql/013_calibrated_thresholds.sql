-- 013 archetype thresholds calibrated by the memory evaluation (issue 9), not guessed.
-- bench/calibrate_thresholds.py asked both data sets' dev questions (466: 388 answerable, 78 adversarial) with every
-- archetype at T = 0.50 .. 0.90 and kept, per archetype, the highest T whose recall_any@10 is within 0.01
-- of its best (the same recall from fewer, surer memories). Run 2026-11-23:
--   general_question  (44 answerable): 0.909 at every T; words kept for adversarial questions 228 -> 198
--   personal_facts   (183 answerable): 0.880 at 0.50-0.60, 0.885 at 0.65-0.70, 0.880 at 0.75, 0.874 above
-- memory_recall and preference_exploration had under 15 questions, technical_debugging and
-- simple_continuation none: they keep their seeded values. Messages no archetype matches use
-- HIPPOBOT_DEFAULT_SIMILARITY_THRESHOLD, now 0.9 (0.877 at 0.50-0.60, 0.896 from 0.70 up).
-- Only a global archetype still at its seeded value changes: a threshold someone set stays theirs.
UPDATE context_archetypes SET similarity_threshold = 0.9, updated_at = now()
 WHERE scope IS NULL AND archetype_name = 'general_question' AND similarity_threshold = 0.7;
UPDATE context_archetypes SET similarity_threshold = 0.75, updated_at = now()
 WHERE scope IS NULL AND archetype_name = 'personal_facts' AND similarity_threshold = 0.65;

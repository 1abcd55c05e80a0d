-- 012 fact vectors (issue 9): each edge's sentence embedded when it is written.
-- Why: recall keeps only the facts whose sentence is similar to the question; embedding a dozen sentences per
-- question cost about 20 ms on 2 cores. A NULL vector (edges written before this migration) is embedded at
-- recall, as before.
ALTER TABLE kg_edges ADD COLUMN embedding vector(384);

-- 027 lexical search no longer reads GIN's pending list on every query (issue 33.2).
-- Why: messages_search_idx (sql/008) was built with GIN's default fastupdate, which appends new entries to
-- a pending list of up to gin_pending_list_limit (4 MB) that is merged only when full or at (auto)vacuum,
-- and every search reads the whole list. On 100,000 messages the list held 393 pages and a one-word query
-- took 2.6 ms instead of 0.1 ms (bench/pipeline.py; lexical search runs on every recall). The smallest
-- limit (64 kB) keeps inserts batched in a list a search reads in a few pages; the list there now is merged
-- here once.
ALTER INDEX messages_search_idx SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list('messages_search_idx'::regclass);

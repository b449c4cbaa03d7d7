-- Recall: three arms, each one indexed query, then the scores of their hits and the memories beside
-- them, ranked in Python, and the memories kept read in full (engine/search/recall.py). /*filter*/ holds the request's conditions (tags, types, filter expression,
-- superseded units left out), bound after each statement's own parameters.

-- recall_semantic --
-- The semantic arm: the bank's memories nearest the query vector ($2) under the filters. One
-- HNSW index serves all banks, bank-filtered by pgvector's iterative index scans, whose
-- relaxed_order (db/pool.py) returns rows only nearly by distance. `ORDER BY d + 0` sorts them:
-- PostgreSQL takes the walk's rows to be in order already and drops a plain `ORDER BY d` (19 of
-- 100 LoCoMo questions at 100k had their 60 out of order; bench/README.md, "Every timed recall
-- embeds its query").
SELECT id FROM (SELECT m.id, m.embedding <=> $2 AS d FROM memories m
                WHERE m.bank_id = $1 /*filter*/ ORDER BY m.embedding <=> $2 LIMIT $3) s
ORDER BY d + 0, id;

-- recall_semantic_exact --
-- The semantic arm for a bank that is small beside the others (engine/recall.semantic_ids): its
-- own rows, ranked by distance. A walk of the shared index reads about $3 / (the bank's share of
-- it) rows to find $3 of the bank's; for 5,000 memories beside 100,000 that was 16-20 ms against
-- ~5 ms for this (bench/README.md, "Semantic arm: a small bank beside a big one"). At most $4 of
-- its rows are read (the count it was chosen by may be seconds old), the filters after; the
-- subquery's LIMIT also keeps it whole, so the ordering outside is a sort, never a walk. Equal
-- distances (a turn said twice) by id, the order retained (engine/memory/ids.py).
SELECT id FROM (SELECT m.id, m.embedding <=> $2 AS d
                FROM (SELECT * FROM memories WHERE bank_id = $1 LIMIT $4) m
                WHERE true /*filter*/) s
ORDER BY d, id LIMIT $3;

-- recall_bank_sizes --
-- How many memories the bank holds (its '' lexeme, migration 004) and, as PostgreSQL counts them,
-- all banks together: the semantic and time arms' choice of plan (engine/banks/sizes.py). The
-- statistics system's live-row count follows every insert and delete but starts again from 0
-- after a crash; the planner's count (reltuples) survives one but waits for VACUUM or ANALYZE.
SELECT coalesce((SELECT n FROM bank_lexemes WHERE bank_id = $1 AND lexeme = ''), 0) AS bank,
       greatest(pg_stat_get_live_tuples('memories'::regclass),
                (SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass)) AS every;

-- recall_temporal --
-- The temporal arm: memories that occurred or were mentioned within the query's window [$4, $5),
-- nearest the query vector first. Planned for each call's window (engine/recall.temporal_ids):
-- a narrow window is read whole and sorted, a wide one walked through the HNSW index with the
-- window as a filter. That walk assumes the window's memories are spread evenly among the query's
-- neighbours; when they were not (a month of other speakers' turns) it walked ~19,000 rows for
-- 50-66 ms and still returned mostly the wrong ones. The planned pool's connections stop a walk
-- at 3,000 rows (db/pool.py); a walk that stops short of $3 memories (a window far from the
-- query, or one the request's filters thin out) is replaced by an exact ranking of the window
-- (bench/README.md, "Temporal arm: a short walk, then exact"). That ranking reads a bounded
-- number of rows whatever the window and the filters: at most $6 mentioned in the window, in the
-- order of their index, and of the memories that occurred, the $6 that started last before the
-- window's end (no index bounds when an event ended), those that overlap it; the filters apply
-- after. What the walk found is ranked with them, so a window wider than that is never ranked
-- worse than the walk alone. $7: a bank small beside the others (engine/banks/sizes.py) skips the walk,
-- which would read most of its 3,000 rows for nothing (planned for true, the walk is pruned).
WITH walk AS MATERIALIZED (SELECT m.id, m.embedding <=> $2 AS d FROM memories m
                           WHERE NOT $7 AND m.bank_id = $1
                             AND ((m.occurred_start < $5 AND m.occurred_end > $4) OR (m.mentioned_at >= $4 AND m.mentioned_at < $5))
                             /*filter*/
                           ORDER BY m.embedding <=> $2 LIMIT $3),
     short AS (SELECT $7 OR count(*) < $3 AS yes FROM walk),
     -- Each row read once, its distance taken there: reading ids first and the rows after read
     -- each twice (bench/README.md, "Time arm: a small bank sorted"). MATERIALIZED: ranked by a
     -- sort of these rows, never by another walk of the index.
     every AS MATERIALIZED ((SELECT m.id, m.embedding <=> $2 AS d
                             FROM (SELECT * FROM memories
                                   WHERE (SELECT yes FROM short) AND bank_id = $1 AND mentioned_at >= $4 AND mentioned_at < $5
                                   LIMIT $6) m
                             WHERE true /*filter*/)
                            UNION
                            (SELECT m.id, m.embedding <=> $2 AS d
                             FROM (SELECT * FROM memories
                                   WHERE (SELECT yes FROM short) AND bank_id = $1 AND occurred_start < $5
                                   ORDER BY occurred_start DESC LIMIT $6) m
                             WHERE m.occurred_end > $4 /*filter*/)
                            UNION
                            (SELECT id, d FROM walk WHERE (SELECT yes FROM short)))
SELECT id FROM ((SELECT id, d FROM walk WHERE NOT (SELECT yes FROM short))
                UNION ALL
                (SELECT id, d FROM every ORDER BY d, id LIMIT $3)) s
ORDER BY d + 0, id; -- sorted, as recall_semantic's walk

-- recall_word_frequencies --
-- How many of the bank's memories hold each query word, and how many memories it has in all
-- (the '' lexeme): one index lookup a word in bank_lexemes (migration 004).
SELECT u.w, coalesce(b.n, 0) AS n, t.n AS total FROM unnest($2::text[]) u(w)
LEFT JOIN bank_lexemes b ON b.bank_id = $1 AND b.lexeme = (tsvector_to_array(to_tsvector('english', u.w)))[1]
LEFT JOIN bank_lexemes t ON t.bank_id = $1 AND t.lexeme = '';

-- recall_keyword --
-- The keyword arm: candidate memories holding query words, ranked by the summed rarity ($3, IDF)
-- of the words ($2) each holds, with that score (ties share a rank in the fusion); every word's query is parsed once (MATERIALIZED), not per row.
-- /*score*/ adds one term per word; /*own*/ and /*candidates*/ are the fragments below.
-- Of memories with equal scores, those holding more distinct words make the cut first (a longer
-- turn with the same query words says more: LoCoMo R@10 0.673, against 0.656 shorter first), then
-- by id: the cut no longer depends on the order rows come in, which changed with the plan
-- (bench/README.md, "Keyword arm: ties at the cut").
WITH q AS MATERIALIZED (SELECT array_agg(to_tsquery('english', w) ORDER BY i) AS tq
                        FROM unnest($2::text[]) WITH ORDINALITY u(w, i)) /*own*/
SELECT c.id, /*score*/ AS score FROM q, /*candidates*/ ORDER BY score DESC, length(c.tsv) DESC, c.id LIMIT $4;

-- recall_keyword_own --
-- Fragment of recall_keyword for a small bank: its own rows under the filters, tested directly;
-- reading a big bank's postings in the shared full-text index would cost more. /*rows*/ is
-- memory_terms when the filters name only its columns (engine/recall.keyword_rows), else memories.
, own AS MATERIALIZED (SELECT m.id, m.tsv FROM /*rows*/ m WHERE m.bank_id = $1 /*filter*/)

-- recall_keyword_own_candidates --
-- Fragment of recall_keyword for a small bank: its own rows holding any query word (/*match*/).
(SELECT m.id, m.tsv FROM own m WHERE m.tsv @@ to_tsquery('english', /*match*/)) c

-- recall_keyword_seed --
-- Fragment of recall_keyword for a large bank: the memories one seed query (/*match*/) finds under
-- the filters, at most /*limit*/ of them; the candidates are the union of these. /*rows*/ as in
-- recall_keyword_own: memory_terms, ~0.3 KB a row, costs ~0.6 ms less a recall at 100,000 memories
-- than the ~2 KB rows of memories (migration 015).
(SELECT m.id, m.tsv FROM /*rows*/ m WHERE m.bank_id = $1 AND m.tsv @@ to_tsquery('english', /*match*/) /*filter*/
 LIMIT /*limit*/)

-- recall_scores --
-- What recall ranks by (engine/search/fusion.py) for the arms' hits ($2) and, when $4, the
-- memories just before and after each in its source (same source_id, adjacent position): each
-- row's similarity to the query vector ($3), its keyword score (/*keyword*/: the summed rarity of
-- the query words $5 it holds, each word parsed once in q), whether it falls in the query's time
-- window (/*window*/, NULL when the query names none), its share of the query's words (/*share*/:
-- with the similarity, its relevance, engine/search/relevance.py), its length (the token budget)
-- and its distinct words (of equal scores, more words go first). Narrow rows: the memories kept
-- after the cut are read in full by recall_rows. The filters apply to every row, the hits too: a
-- hit the keyword arm found in memory_terms (migration 015), or one edited since its arm ran, is
-- checked on the memory itself.
WITH q AS MATERIALIZED (SELECT array_agg(to_tsquery('english', w) ORDER BY i) AS tq
                        FROM unnest($5::text[]) WITH ORDINALITY u(w, i)),
     hits AS MATERIALIZED (SELECT m.source_id, m.position FROM unnest($2::uuid[]) u(id),
                                LATERAL (SELECT * FROM memories m WHERE $4 AND m.id = u.id AND m.bank_id = $1 OFFSET 0) m),
     -- Each hit's neighbours looked up in the (bank_id, source_id, position) index: joined as a
     -- set, the planner matched the positions alone and filtered ~30 rows a hit by source.
     ids AS MATERIALIZED (SELECT unnest($2::uuid[]) AS id
                          UNION
                          SELECT n.id FROM hits h,
                               LATERAL (SELECT m.id FROM memories m
                                        WHERE m.bank_id = $1 AND m.source_id = h.source_id
                                          AND m.position IN (h.position - 1, h.position + 1)) n)
-- Each row read by its primary key: OFFSET 0 keeps the lookup a lookup, where a join left to the
-- planner, with a fresh bank's row count not yet in its statistics, read the whole bank and
-- matched each row against every id (~30 ms instead of ~1 for 240 rows).
SELECT m.id, m.source_id, m.position, length(m.text) AS chars, length(m.tsv) AS terms,
       1 - (m.embedding <=> $3) AS similarity,
       /*keyword*/ AS keyword, /*window*/ AS in_window, /*share*/ AS share
FROM ids, q, LATERAL (SELECT * FROM memories m WHERE m.id = ids.id AND m.bank_id = $1 /*filter*/ OFFSET 0) m;

-- recall_rows --
-- The memories a recall returns ($2: recall_scores ranked them, under the filters, and the cut
-- kept them), read in full, each by its primary key (as recall_scores reads its rows).
SELECT /*columns*/ FROM unnest($2::uuid[]) u(id),
       LATERAL (SELECT * FROM memories m WHERE m.id = u.id AND m.bank_id = $1 OFFSET 0) m;

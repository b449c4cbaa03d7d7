-- Recall: four arms, each one indexed query, fused in Python, then one details statement
-- (engine/search/recall.py). /*filter*/ holds the request's conditions (tags, types, filter expression,
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

-- recall_semantic_entity_exact --
-- The semantic and entity arms at once for a bank small beside the others, in hybrid mode: the
-- sort recall_semantic_exact makes takes every row's distance, and the entity arm's ties (a
-- speaker's name links half the bank's turns, all of equal rarity) are broken by those distances,
-- where recall_entity read each linked memory's row again through its primary key to take them.
-- One row: the semantic arm's ids nearest first, the entity arm's by rarity, then distance (equal
-- distances, a turn said twice, by id).
-- Rarity as in recall_entity (recall_entity_rarity); $5 the query's canonical n-grams
-- (bench/README.md, "Semantic and entity arms: one sort for a small bank").
WITH d AS MATERIALIZED (SELECT m.id, m.embedding <=> $2 AS d
                        FROM (SELECT * FROM memories WHERE bank_id = $1 LIMIT $4) m
                        WHERE true /*filter*/)
SELECT ARRAY(SELECT id FROM d ORDER BY d, id LIMIT $3) AS semantic,
       ARRAY(SELECT s.memory_id
             FROM (SELECT me.memory_id, sum(/*rarity*/) AS rarity
                   FROM entities e JOIN memory_entities me ON me.entity_id = e.id
                   WHERE e.bank_id = $1 AND e.canonical = ANY($5::text[])
                   GROUP BY me.memory_id) s
             JOIN d ON d.id = s.memory_id
             ORDER BY s.rarity DESC, d.d, d.id LIMIT $3) AS entity;

-- recall_bank_sizes --
-- How many memories the bank holds (its '' lexeme, migration 004) and, as PostgreSQL counts them,
-- all banks together: the semantic and time arms' choice of plan (engine/banks/sizes.py). The
-- statistics system's live-row count follows every insert and delete but starts again from 0
-- after a crash; the planner's count (reltuples) survives one but waits for VACUUM or ANALYZE.
SELECT coalesce((SELECT n FROM bank_lexemes WHERE bank_id = $1 AND lexeme = ''), 0) AS bank,
       greatest(pg_stat_get_live_tuples('memories'::regclass),
                (SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass)) AS every;

-- recall_entity_rarity --
-- Fragment: how rare an entity `e` is in the bank ($1), the entity arm's ranking (recall_entity,
-- recall_semantic_entity_exact): ln(1 + the bank's memories / the entity's mentions), so a speaker
-- named in half the bank counts for little.
ln(1 + (SELECT n FROM bank_lexemes WHERE bank_id = $1 AND lexeme = '') / greatest(e.mention_count, 1)::float8)

-- recall_entity --
-- The entity arm of a bank that is walked: memories mentioning the entities the query names ($2,
-- canonical n-grams), ranked by how rare those entities are in the bank (summed over the named
-- entities a memory mentions), then by closeness to the query vector ($4). Only the entities
-- whose mentions, rarest first, add up to $5 (engine/recall.ENTITY_SCAN_CAP) are read link by
-- link: a name in 30,000 of a bank's memories made the arm read and sort all of them (~90 ms at
-- 100k; bench/README.md, "Entity arm: a name in every memory"). The rest (`common`, returned)
-- still add their rarity to the memories read, and recall_entity_walk finds their memories
-- nearest the query when these are too few.
-- Rarity is summed over the links alone, then joined to the memories: grouping the joined rows
-- sorted each memory's whole row, vector included (bench/README.md, "Entity arm: group the links").
WITH named AS MATERIALIZED (
         SELECT e.id, /*rarity*/ AS rarity,
                sum(greatest(e.mention_count, 1)) OVER (ORDER BY e.mention_count, e.id) <= $5 AS seed
         FROM entities e WHERE e.bank_id = $1 AND e.canonical = ANY($2::text[])),
     s AS (SELECT me.memory_id, sum(n.rarity) AS rarity
           FROM memory_entities me JOIN named n ON n.id = me.entity_id AND n.seed
           GROUP BY me.memory_id)
SELECT ARRAY(SELECT m.id FROM s JOIN memories m ON m.id = s.memory_id
             WHERE m.bank_id = $1 /*filter*/
             ORDER BY s.rarity + CASE WHEN (SELECT bool_or(NOT seed) FROM named)
                                      THEN coalesce((SELECT sum(n.rarity) FROM memory_entities me
                                                     JOIN named n ON n.id = me.entity_id AND NOT n.seed
                                                     WHERE me.memory_id = m.id), 0)
                                      ELSE 0 END DESC,
                      m.embedding <=> $4, m.id LIMIT $3) AS ids,
       ARRAY(SELECT id FROM named WHERE NOT seed) AS common;

-- recall_entity_walk --
-- The entity arm's memories of entities too common to read link by link ($2, entity ids of this
-- bank from recall_entity), nearest the query vector ($4) first, by a walk of the vector index
-- that tests each memory's links; not those recall_entity returned ($5). On the planned pool, whose
-- connections stop a walk at a bounded number of rows (db/pool.py): an entity rare in the index
-- returns fewer, never a long walk.
SELECT id FROM (SELECT m.id, m.embedding <=> $4 AS d FROM memories m
                WHERE m.bank_id = $1 AND m.id <> ALL($5::uuid[])
                  AND EXISTS (SELECT 1 FROM memory_entities me WHERE me.memory_id = m.id AND me.entity_id = ANY($2::bigint[]))
                  /*filter*/
                ORDER BY m.embedding <=> $4 LIMIT $3) s
ORDER BY d + 0, id; -- sorted, as recall_semantic's walk

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

-- recall_details --
-- One round trip for the fused hits ($2) with their relevance, and the neighbouring units of the
-- best of them ($3, a few of $2); hits and neighbours are united by id, so each row is read once.
-- Only the parents' positions are looked up before: reading every hit's for that read each hit's
-- row twice (~0.15 ms of ~1 ms; bench/README.md, "Details: the parents' rows alone").
-- The filters apply to every row returned, the arms' hits too: a hit the keyword arm found in
-- memory_terms (migration 015), or one edited since its arm ran, is checked on the memory itself.
WITH parents AS (SELECT m.source_id, m.position FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($3::uuid[])),
     nb AS (SELECT m.id FROM memories m JOIN parents p ON m.bank_id = $1 AND m.source_id = p.source_id
                AND m.position IN (p.position - 1, p.position + 1))
SELECT /*columns*/, /*relevance*/ AS relevance FROM memories m
WHERE m.bank_id = $1 AND m.id IN (SELECT unnest($2::uuid[]) UNION SELECT id FROM nb) /*filter*/;

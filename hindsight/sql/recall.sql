-- Recall: three arms, each one indexed query, then one statement that scores their hits and the
-- memories beside them, ranks them and reads the memories kept in full (engine/search/recall.py).
-- /*filter*/ holds the request's conditions (tags, types, filter expression, superseded units left
-- out), bound after each statement's own parameters.

-- recall_semantic_walk --
-- Fragment: the semantic arm, the bank's memories nearest the query vector (/*vector*/) under the
-- filters, at most /*limit*/ (arms/semantic.py; run on its own, or inside recall_ranked). One HNSW
-- index serves all banks, bank-filtered by pgvector's iterative index scans, whose relaxed_order
-- (db/pool.py) returns rows only nearly by distance. `ORDER BY d + 0` sorts them: PostgreSQL
-- takes the walk's rows to be in order already and drops a plain `ORDER BY d` (19 of 100 LoCoMo
-- questions at 100k had their 60 out of order; bench/README.md, "Every timed recall embeds its
-- query").
SELECT id FROM (SELECT m.id, m.embedding <=> /*vector*/ AS d FROM memories m
                WHERE m.bank_id = $1 /*filter*/ ORDER BY m.embedding <=> /*vector*/ LIMIT /*limit*/) s
ORDER BY d + 0, id

-- recall_semantic_sort --
-- Fragment: the semantic arm for a bank that is small beside the others (engine/banks/sizes.py),
-- as recall_semantic_walk: its own rows, ranked by distance. A walk of the shared index reads
-- about /*limit*/ / (the bank's share of it) rows to find that many of the bank's, several
-- times the cost of this sort for a small bank (bench/README.md, "Semantic arm: a small bank
-- beside a big one"). At most /*read*/ of its rows are read (the count it was
-- chosen by may be seconds old), the filters after; the subquery's LIMIT also keeps it whole, so
-- the ordering outside is a sort, never a walk. Equal distances (a turn said twice) by id, the
-- order retained (engine/memory/ids.py).
SELECT id FROM (SELECT m.id, m.embedding <=> /*vector*/ AS d
                FROM (SELECT * FROM memories WHERE bank_id = $1 LIMIT /*read*/) m
                WHERE true /*filter*/) s
ORDER BY d, id LIMIT /*limit*/

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
-- neighbours; when they are not (a month of other speakers' turns) it walks far and still
-- returns mostly the wrong ones. The planned pool's connections stop a walk
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
-- recall_keyword_own: memory_terms, rows a fraction of the size of memories' (migration 015), so
-- fewer pages are read a recall.
(SELECT m.id, m.tsv FROM /*rows*/ m WHERE m.bank_id = $1 AND m.tsv @@ to_tsquery('english', /*match*/) /*filter*/
 LIMIT /*limit*/)

-- recall_ranked --
-- Recall's ranking in one round trip (engine/search/details.py): the hits of the semantic arm
-- (/*semantic*/: recall_semantic_sort when it runs here, for a bank small enough to sort; none
-- when it ran on its own) and of the other arms ($2) and, when $4, the memories just before and
-- after each of the best hits (the leads: $16 by own score, $17 by keyword score) in its source
-- (same source_id, adjacent position), scored, ranked by score-level fusion with their context
-- (engine/search/fusion.py has the formula; $6-$10 its weights:
-- semantic, keyword, time, neighbour, source), cut to the caller's limits, and the memories kept
-- read in full, each with whether the semantic arm found it here. One round trip instead of a
-- narrow read, a ranking in Python and a read of the rows kept (bench/README.md, "Recall as cheap
-- as before"). Scored (/*scores*/, recall_scores_columns): each row's similarity to the query
-- vector ($3), its keyword score (/*keyword*/: the summed rarity of the query words $5 it holds,
-- each word parsed once in q), whether it falls in the query's time window (/*window*/, NULL when
-- it names none), its length (the token budget) and its distinct words (of equal scores, more
-- words go first, then the lower id); its share of the query's words (/*share*/; with the
-- similarity, its relevance, engine/search/relevance.py, weighted $11 and $12) only where the
-- relevance floor ($13) needs it, else for the rows kept. Each row is read once where it is found,
-- a hit by its primary key, a neighbour by its tuple id once the (bank_id, source_id, position)
-- index has found it, and a kept one again for its columns by its tuple id (the same snapshot:
-- the same row). The filters apply to every row ranked, the hits too (a hit the keyword arm found
-- in memory_terms, migration 015, or one edited since its arm ran, is checked on the memory
-- itself), and a hit they leave out is no lead. The cut is Python's (budget.cut,
-- on each row's relevance as results carry it, rounded to 4 places); this passes it every row
-- it could keep and at most one more: rows sure to pass the floor (relevance 0.0001 above it;
-- rounding moves it by at most 0.00005) count toward top_k ($14, NULL: none) and max_tokens ($15),
-- rows within 0.0001 of it are passed without counting, rows further below it are left out. When
-- nothing is kept, one row with a NULL id, so that `best` (the best keyword score among the rows
-- ranked, which a trace reports) always comes back.
WITH q AS MATERIALIZED (SELECT array_agg(to_tsquery('english', w) ORDER BY i) AS tq
                        FROM unnest($5::text[]) WITH ORDINALITY u(w, i)),
     sem AS MATERIALIZED (/*semantic*/),
     found AS (SELECT id, bool_or(semantic) AS semantic
               FROM (SELECT id, true AS semantic FROM sem UNION ALL SELECT unnest($2::uuid[]), false) x GROUP BY id),
     -- OFFSET 0 keeps each primary-key lookup a lookup, where a join left to the planner, with a
     -- fresh bank's row count not yet in its statistics, may read the whole bank and match each row
     -- against every id.
     hit AS MATERIALIZED (SELECT m.id, m.tid, m.source_id, m.position, /*scores*/, u.semantic,
                                 coalesce(true /*filter*/, false) AS passes
                          FROM q, found u,
                               LATERAL (SELECT m.*, m.ctid AS tid FROM memories m WHERE m.id = u.id AND m.bank_id = $1 OFFSET 0) m),
     -- The hits whose neighbours are read (the leads), among those the filters keep: the best $16
     -- by their own score (recall_base, its keyword part scaled by the best keyword score among
     -- them) and the best $17 by keyword score alone (a rare word a memory holds, where many
     -- memories much like the query crowd the first), the lower id first of equals. A weaker hit
     -- still gains from a lead beside it, and a memory beside a weak hit alone seldom ranks high:
     -- reading fewer neighbours costs the ranking little and saves a lookup and a scored row each
     -- (bench/README.md, "Neighbours of the best hits").
     lead AS ((SELECT s.source_id, s.position
               FROM hit s, (SELECT coalesce(max(keyword), 0) AS best FROM hit WHERE passes) b
               WHERE s.passes
               ORDER BY /*base*/ DESC, s.id
               LIMIT $16::int)
              UNION
              (SELECT s.source_id, s.position FROM hit s
               WHERE s.passes AND s.keyword > 0
               ORDER BY s.keyword DESC, s.id
               LIMIT $17::int)),
     -- Each lead's neighbours looked up in the (bank_id, source_id, position) index, one range a
     -- lead (joined as a set, the planner matched the positions alone and filtered ~30 rows a hit
     -- by source), each once, then read by its tuple id and scored.
     near AS (SELECT DISTINCT n.id, n.tid
              FROM lead h, LATERAL (SELECT m.id, m.ctid AS tid FROM memories m
                                   WHERE $4 AND m.bank_id = $1 AND m.source_id = h.source_id
                                     AND m.position BETWEEN h.position - 1 AND h.position + 1
                                     AND m.position <> h.position /*filter*/ OFFSET 0) n
              WHERE n.id NOT IN (SELECT id FROM hit)),
     beside AS (SELECT m.id, m.tid, m.source_id, m.position, /*scores*/
                FROM q, near n, LATERAL (SELECT m.*, m.ctid AS tid FROM memories m
                                         WHERE m.ctid = n.tid AND m.id = n.id AND m.bank_id = $1 OFFSET 0) m),
     scored AS (SELECT id, tid, source_id, position, chars, terms, similarity, keyword, in_window, share, semantic
                FROM hit WHERE passes
                UNION ALL
                SELECT id, tid, source_id, position, chars, terms, similarity, keyword, in_window, share, false
                FROM beside),
     best AS (SELECT coalesce(max(keyword), 0) AS best FROM scored),
     own AS (SELECT s.*, /*base*/ AS base FROM scored s, best b),
     -- The better base of the memories just before and after each (the positions either side of
     -- its own, EXCLUDE GROUP leaving out those at its own), and the best base in its source: two
     -- windows over one sort.
     context AS (SELECT o.*, CASE WHEN $4 THEN coalesce(max(o.base) OVER around, 0) END AS neighbour,
                        CASE WHEN $4 THEN max(o.base) OVER source END AS source
                 FROM own o
                 WINDOW source AS (PARTITION BY o.source_id),
                        around AS (PARTITION BY o.source_id ORDER BY o.position
                                   RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP)),
     -- Relevance only counts with a floor: the share of the query's words is read for each row
     -- then, and for the rows kept otherwise.
     graded AS (SELECT c.*, CASE WHEN $4 THEN c.base + $9::float8 * c.neighbour + $10::float8 * c.source ELSE c.base END AS score,
                       $13::float8 <= 0 OR r.relevance >= $13::float8 + 0.0001 AS sure
                FROM context c,
                     LATERAL (SELECT CASE WHEN c.similarity IN ('NaN', 'Infinity', '-Infinity') THEN 0
                                          ELSE $11::float8 * greatest(0, c.similarity) + $12::float8 * c.share END AS relevance) r
                WHERE $13::float8 <= 0 OR r.relevance >= $13::float8 - 0.0001),
     cut AS (SELECT g.*, coalesce(sum(greatest(1, (g.chars + 3) / 4)) FILTER (WHERE g.sure) OVER w, 0) AS tokens_before,
                    count(*) FILTER (WHERE g.sure) OVER w AS before
             FROM graded g
             WINDOW w AS (ORDER BY g.score DESC, g.terms DESC, g.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
SELECT b.best, k.* FROM best b
LEFT JOIN LATERAL (SELECT /*columns*/, c.similarity, c.keyword, c.in_window, /*share*/ AS share, c.chars, c.terms AS words,
                          c.base, c.neighbour, c.source, c.score, c.semantic
                   FROM cut c, LATERAL (SELECT * FROM memories m WHERE m.ctid = c.tid AND m.id = c.id AND m.bank_id = $1 OFFSET 0) m
                   WHERE c.before < coalesce($14::int, 2147483647) AND c.tokens_before <= $15::int) k ON true
ORDER BY k.score DESC, k.words DESC, k.id;

-- recall_base --
-- Fragment of recall_ranked: a memory's own score (fusion.py) from its row `s` (similarity,
-- keyword, in_window) and the best keyword score `b.best`. A vector of zeros has no direction (an
-- import can hold one): its NaN similarity counts as 0.
$6::float8 * (CASE WHEN s.similarity IN ('NaN', 'Infinity', '-Infinity') THEN 0 ELSE s.similarity END)
+ (CASE WHEN b.best > 0 THEN $7::float8 / b.best ELSE 0 END) * s.keyword
+ (CASE WHEN s.in_window THEN $8::float8 ELSE 0 END)

-- recall_scores_columns --
-- Fragment of recall_ranked: what ranking needs of one memory `m` (its keyword, window and share
-- parts filled in as /*keyword*/, /*window*/, /*share*/).
length(m.text) AS chars, length(m.tsv) AS terms, 1 - (m.embedding <=> $3) AS similarity,
/*keyword*/ AS keyword, /*window*/ AS in_window, CASE WHEN $13::float8 > 0 THEN /*share*/ END AS share

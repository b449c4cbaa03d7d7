-- Document search: rag_search, search_documents and verify_document_access (engine/knowledge/rag.py).
-- Access: a caller sees a document that is public (no tags, no allowed users), shares one of its
-- session tags or is among its allowed users (bound as $3 and $4, or $2 and $3 in the keyword
-- statement). /*filter*/ holds the request's filter expression, bound after each statement's own
-- parameters.
-- "Public" is written as equality with '{}', which PostgreSQL estimates from its statistics
-- (cardinality(...) = 0 is guessed to pass 0.5% of documents, and searches would be planned from
-- the documents, a probe of the chunks for each; bench/README.md, "Documents: access the planner
-- can count"). Documents are joined within the bank.

-- chunk_semantic --
-- The semantic arm of one phrase: the bank's chunks nearest its vector ($2) that the caller may
-- see, sorted after the walk as recall_semantic's (relaxed_order returns them nearly in order).
SELECT id FROM (SELECT c.id, c.embedding <=> $2 AS dist
                FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id
                WHERE c.bank_id = $1
                  AND ((d.tags = '{}' AND d.allowed_users = '{}') OR d.tags && $3::text[] OR $4::text = ANY(d.allowed_users))
                  /*filter*/
                ORDER BY c.embedding <=> $2 LIMIT $5) s
ORDER BY dist + 0;

-- chunk_word_frequencies --
-- How many of the bank's chunks hold each word of a search's phrases ($2), and how many chunks it
-- has in all (the '' lexeme): one index lookup a word in chunk_lexemes (migration 014).
SELECT u.w, coalesce(b.n, 0) AS n, t.n AS total FROM unnest($2::text[]) u(w)
LEFT JOIN chunk_lexemes b ON b.bank_id = $1 AND b.lexeme = (tsvector_to_array(to_tsvector('english', u.w)))[1]
LEFT JOIN chunk_lexemes t ON t.bank_id = $1 AND t.lexeme = '';

-- chunk_keyword --
-- The keyword arms of a search, one branch (chunk_keyword_branch) a phrase, in one statement:
-- each phrase's text differs, and as statements of their own each took a round trip to prepare.
-- Rows: the phrase's index and a chunk id, each phrase's best first.
SELECT phrase, id FROM (/*branches*/) k ORDER BY phrase, score DESC, len DESC, id;

-- chunk_keyword_branch --
-- Fragment of chunk_keyword: the keyword arm of one phrase (/*phrase*/, its index), as recall's (recall_keyword): the chunks
-- holding its words (/*words*/, rarest first) that the caller may see, ranked by the summed rarity
-- (IDF) of the words each holds (/*score*/); candidates from the union of /*candidates*/
-- (chunk_keyword_seed), the chunks holding the rarest words first, and, when those give fewer
-- than the arm's $4 and words were left out, /*wider*/ (chunk_keyword_wider). Of equal scores,
-- chunks holding more distinct words first, then by id (of a word held by over 1,000 chunks, the
-- ones holding it alone are read as any 60 of them: they all score the same).
-- Why not ts_rank over every chunk holding any word: it is blind to rarity (a page where a
-- speaker's name comes twenty times outranks the page holding the rare words asked about) and
-- reads every such chunk (bench/README.md, "Documents: the keyword arm weighs rare words").
(WITH q AS MATERIALIZED (SELECT array_agg(to_tsquery('english', w) ORDER BY i) AS tq
                         FROM unnest(/*words*/) WITH ORDINALITY u(w, i)),
      seeded AS MATERIALIZED (SELECT c.id, /*score*/ AS score, length(c.tsv) AS len
                              FROM q, /*candidates*/ ORDER BY score DESC, len DESC, c.id LIMIT $4)
 SELECT /*phrase*/ AS phrase, id, score, len FROM (SELECT * FROM seeded /*wider*/) s
 ORDER BY score DESC, len DESC, id LIMIT $4)

-- chunk_keyword_wider --
-- Fragment of chunk_keyword_branch: when the seeds' chunks the caller may see under the filter are
-- fewer than the arm's $4, those holding the words left out (/*candidates*/, seeded as the first
-- seeds are, so chunks holding several of them come first): seeds are chosen by
-- the bank's counts, private documents included, and a rare word only in documents the caller
-- cannot see emptied the arm, which told them the word was there.
UNION SELECT c.id, /*score*/, length(c.tsv) FROM q, /*candidates*/ WHERE (SELECT count(*) < $4 FROM seeded)

-- chunk_keyword_seed --
-- Fragment of chunk_keyword_branch: the chunks one seed query (/*match*/) finds that the caller may
-- see, under the filter, at most /*limit*/ of them.
(SELECT c.id, strip(c.tsv) AS tsv FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id
 WHERE c.bank_id = $1 AND c.tsv @@ to_tsquery('english', /*match*/)
   AND ((d.tags = '{}' AND d.allowed_users = '{}') OR d.tags && $2::text[] OR $3::text = ANY(d.allowed_users))
   /*filter*/
 LIMIT /*limit*/)

-- chunk_details --
-- The bank's ($1) fused chunks ($2) with their documents and relevance to the phrases.
SELECT c.id, c.document_id, c.position, c.text, c.headline, c.page_start, c.page_end,
       d.source_name, d.source_type, d.source_url, /*relevance*/ AS relevance
FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id
WHERE c.bank_id = $1 AND c.id = ANY($2::uuid[]);

-- chunk_access --
-- Whether the caller may still see a segment's document, checked with the current headers.
SELECT d.source_url,
       ((d.tags = '{}' AND d.allowed_users = '{}') OR d.tags && $3::text[] OR $4::text = ANY(d.allowed_users)) AS ok
FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id
WHERE c.bank_id = $1 AND c.id = $2;

-- Document search: rag_search, search_documents and verify_document_access (engine/rag.py).
-- Access: a caller sees a document that is public (no tags, no allowed users), shares one of its
-- session tags ($3) or is among its allowed users ($4). /*filter*/ holds the request's filter
-- expression, bound after each statement's own parameters.
-- "Public" is written as equality with '{}', which PostgreSQL estimates from its statistics:
-- written as cardinality(...) = 0 it was guessed to pass 0.5% of documents, so searches were
-- planned from the documents, a probe of the chunks for each: 200 ms for a bank of 2,000 chunks
-- beside one of 100,000, 2.3 s for the big bank's keyword arm (bench/README.md, "Documents:
-- access the planner can count"). Documents are joined within the bank.

-- chunk_semantic --
-- The semantic arm of one phrase: the bank's chunks nearest its vector ($2) that the caller may see.
SELECT c.id FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id
WHERE c.bank_id = $1
  AND ((d.tags = '{}' AND d.allowed_users = '{}') OR d.tags && $3::text[] OR $4::text = ANY(d.allowed_users))
  /*filter*/
ORDER BY c.embedding <=> $2 LIMIT $5;

-- chunk_keyword --
-- The keyword arm of one phrase: chunks matching its words ($2, a tsquery) that the caller may see;
-- of equal ranks, by id (the cut does not depend on the plan's row order).
-- ts_rank, not ts_rank_cd: of a query's words joined by OR, cover density counts every occurrence
-- of any of them, so a page where a speaker's name comes twenty times outranked the one page
-- holding the rare words asked about; ts_rank gives a word's repeats little more than its first
-- occurrence, so the pages holding more of the words rank first. LoCoMo's conversations as 668
-- chunks, 1,536 questions: evidence in the arm's top 10 0.765 -> 0.907, in the fused top 10
-- 0.790 -> 0.823, at half the cost (bench/README.md, "Documents: the keyword arm's rank").
SELECT c.id FROM chunks c JOIN documents d ON d.bank_id = c.bank_id AND d.id = c.document_id, to_tsquery('english', $2) q
WHERE c.bank_id = $1 AND c.tsv @@ q
  AND ((d.tags = '{}' AND d.allowed_users = '{}') OR d.tags && $3::text[] OR $4::text = ANY(d.allowed_users))
  /*filter*/
ORDER BY ts_rank(c.tsv, q, 1) DESC, c.id LIMIT $5;

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

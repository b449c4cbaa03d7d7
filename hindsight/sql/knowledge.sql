-- The knowledge base's folders and pages (engine/knowledge/pages.py).

-- kb_node_columns --
-- Fragment: a node's columns, with its mental model's (a generated page) and the refresh pending
-- for it, for statements reading `knowledge_nodes n LEFT JOIN mental_models mm`.
n.bank_id, n.id, n.kind, n.name, n.parent_id, n.mental_model_id, n.content, n.tags, n.managed, n.created_at,
n.updated_at, mm.source_query, mm.tags AS model_tags, mm.content AS model_content, mm.status AS model_status,
mm.last_refreshed_at, mm.max_tokens,
(SELECT o.id FROM operations o WHERE o.bank_id = n.bank_id AND o.status IN ('queued', 'running')
   AND o.dedup_key = 'mental_model:' || n.bank_id || ':' || n.mental_model_id LIMIT 1) AS pending

-- kb_nodes --
-- Every node of the bank's knowledge base (at most a few thousand), folders first, by name.
SELECT /*columns*/ FROM knowledge_nodes n
LEFT JOIN mental_models mm ON mm.bank_id = n.bank_id AND mm.id = n.mental_model_id
WHERE n.bank_id = $1 ORDER BY n.kind, lower(n.name), n.id;

-- kb_node_get --
-- One node of the bank's knowledge base.
SELECT /*columns*/ FROM knowledge_nodes n
LEFT JOIN mental_models mm ON mm.bank_id = n.bank_id AND mm.id = n.mental_model_id
WHERE n.bank_id = $1 AND n.id = $2;

-- kb_node_count --
-- How many nodes the bank's knowledge base holds, against its limit (under the bank's write lock).
SELECT count(*) FROM knowledge_nodes WHERE bank_id = $1;

-- kb_ancestors --
-- A node and the folders above it, nearest first (a move must not put a folder under itself, and
-- the tree's depth is bounded).
WITH RECURSIVE up (id, parent_id, depth) AS (
    SELECT id, parent_id, 1 FROM knowledge_nodes WHERE bank_id = $1 AND id = $2
    UNION ALL
    SELECT n.id, n.parent_id, up.depth + 1 FROM knowledge_nodes n JOIN up ON n.id = up.parent_id
    WHERE n.bank_id = $1 AND up.depth < 1000
)
SELECT id, kind FROM up JOIN knowledge_nodes k USING (id) WHERE k.bank_id = $1 ORDER BY depth;

-- kb_subtree --
-- A node and everything under it: what deleting it takes away, and how deep it reaches.
WITH RECURSIVE down (id, depth) AS (
    SELECT id, 1 FROM knowledge_nodes WHERE bank_id = $1 AND id = $2
    UNION ALL
    SELECT n.id, down.depth + 1 FROM knowledge_nodes n JOIN down ON n.parent_id = down.id
    WHERE n.bank_id = $1 AND down.depth < 1000
)
SELECT n.id, n.kind, n.mental_model_id, n.content IS NOT NULL AS written, down.depth
FROM knowledge_nodes n JOIN down USING (id) WHERE n.bank_id = $1;

-- kb_page_name_taken --
-- Whether another page of the folder ($2, NULL for the top) has this name, in any case.
SELECT true FROM knowledge_nodes
WHERE bank_id = $1 AND kind = 'page' AND coalesce(parent_id, '') = coalesce($2, '') AND lower(name) = lower($3)
  AND id IS DISTINCT FROM $4;

-- kb_node_insert --
-- A new folder or page of the bank's knowledge base.
INSERT INTO knowledge_nodes (bank_id, id, kind, name, parent_id, mental_model_id, content, tags, managed)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- kb_node_update --
-- Rename, move ($4: whether parent_id changes, to $5) or rewrite a node; NULL keeps a value.
UPDATE knowledge_nodes SET name = coalesce($3, name), parent_id = CASE WHEN $4 THEN $5 ELSE parent_id END,
                           content = coalesce($6, content), tags = coalesce($7, tags), updated_at = now()
WHERE bank_id = $1 AND id = $2;

-- kb_node_delete --
-- Delete a node; its subtree goes by cascade.
DELETE FROM knowledge_nodes WHERE bank_id = $1 AND id = $2;

-- kb_search_keyword --
-- The bank's pages whose name and content hold the query's words ($2, web-search syntax), best
-- first, with a snippet around them.
SELECT n.id, ts_rank_cd(to_tsvector('english', n.name || ' ' || coalesce(n.content, mm.content, '')), q) AS rank,
       ts_headline('english', coalesce(n.content, mm.content, n.name), q, 'MaxWords=30, MinWords=12') AS snippet
FROM knowledge_nodes n
LEFT JOIN mental_models mm ON mm.bank_id = n.bank_id AND mm.id = n.mental_model_id
CROSS JOIN websearch_to_tsquery('english', $2) q
WHERE n.bank_id = $1 AND n.kind = 'page'
  AND to_tsvector('english', n.name || ' ' || coalesce(n.content, mm.content, '')) @@ q
ORDER BY rank DESC, n.id LIMIT $3;

-- kb_search_vector --
-- The bank's pages nearest the query's vector ($2), at least $4 similar: a written page by its
-- nearest retained unit (document `kb:<page id>`), a generated one by its source query.
SELECT id, similarity FROM (
    SELECT n.id, greatest(
        (SELECT max(1 - (m.embedding <=> $2)) FROM memories m WHERE m.bank_id = n.bank_id AND m.document_id = 'kb:' || n.id),
        1 - (mm.embedding <=> $2)) AS similarity
    FROM knowledge_nodes n
    LEFT JOIN mental_models mm ON mm.bank_id = n.bank_id AND mm.id = n.mental_model_id
    WHERE n.bank_id = $1 AND n.kind = 'page'
) s WHERE similarity >= $4 ORDER BY similarity DESC, id LIMIT $3;

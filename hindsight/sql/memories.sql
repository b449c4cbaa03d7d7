-- Stored memory units: browsing, deleting, lineage and entities (engine/memory/records.py).

-- memory_columns --
-- Fragment: the columns of a Memory (memories.to_memory) for statements reading `memories m`.
-- Entity names as retain kept them on the memory (migration 012), else through its links.
m.id, m.text, m.kind, m.context, m.occurred_start, m.occurred_end, m.mentioned_at,
m.document_id, m.metadata, m.tags, m.created_at, m.source_id, m.position, m.superseded,
coalesce(m.valid_from, least(m.occurred_start, m.mentioned_at), m.created_at) AS valid_from, m.valid_to,
m.superseded_by, m.invalidated_at, m.invalidation_reason,
coalesce(m.entity_names, /*linked_names*/) AS entities

-- memory_linked_names --
-- Fragment: the names of the entities `memories m` is linked to, sorted by code point as retain
-- sorts them. One primary-key lookup per link (a scalar subquery the planner cannot turn into a
-- join): written as a join, a bank with a few hundred entities got a hash join that scanned the
-- whole entities table once per memory (bench/README.md, "Recall's PostgreSQL statements").
ARRAY(SELECT n FROM (SELECT (SELECT e.name FROM entities e WHERE e.id = me.entity_id AND e.bank_id = m.bank_id) AS n
                     FROM memory_entities me WHERE me.memory_id = m.id) s ORDER BY n COLLATE "C")

-- memory_list --
-- A page of the bank's memories, newest first, under the listing's conditions (bound after $3).
SELECT /*columns*/ FROM memories m WHERE m.bank_id = $1 /*where*/
ORDER BY m.created_at DESC, m.source_id, m.position LIMIT $2 OFFSET $3;

-- memory_count --
-- How many memories match memory_list's conditions.
SELECT count(*) FROM memories m WHERE m.bank_id = $1 /*where*/;

-- memory_get --
-- One memory of a bank.
SELECT /*columns*/ FROM memories m WHERE m.bank_id = $1 AND m.id = $2;

-- memory_get_many --
-- The bank's memories among the given ids (reflect's and the client API's look-ups).
SELECT /*columns*/ FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]);

-- memory_exists --
-- Whether a memory is in the bank.
SELECT true FROM memories WHERE bank_id = $1 AND id = $2;

-- memory_release_entities --
-- The entities of the bank's memories about to be deleted (or relinked) lose those mentions.
UPDATE entities e SET mention_count = greatest(0, e.mention_count - x.n)
FROM (SELECT me.entity_id, count(*) AS n FROM memory_entities me JOIN memories m ON m.id = me.memory_id
      WHERE m.bank_id = $1 AND me.memory_id = ANY($2::uuid[]) GROUP BY me.entity_id) x
WHERE e.bank_id = $1 AND x.entity_id = e.id;

-- memory_delete_many --
-- Delete some of the bank's memories (an erasure: engine/forgetting/erase.py).
DELETE FROM memories WHERE bank_id = $1 AND id = ANY($2::uuid[]);

-- memory_sources --
-- The raw units a fact was extracted from, in their order.
SELECT /*columns*/ FROM memories m JOIN fact_sources f ON f.raw_id = m.id
WHERE f.fact_id = $1 AND m.bank_id = $2 ORDER BY m.source_id, m.position;

-- memory_facts --
-- The facts extracted from a raw unit.
SELECT /*columns*/ FROM memories m JOIN fact_sources f ON f.fact_id = m.id
WHERE f.raw_id = $1 AND m.bank_id = $2 ORDER BY m.created_at, m.id;

-- entity_list --
-- A page of the bank's entities still mentioned, most mentioned first, under the listing's conditions.
SELECT id, name, kind, mention_count FROM entities WHERE bank_id = $1 AND mention_count > 0 /*where*/
ORDER BY mention_count DESC, name LIMIT $2 OFFSET $3;

-- entity_count --
-- How many entities match entity_list's conditions.
SELECT count(*) FROM entities WHERE bank_id = $1 AND mention_count > 0 /*where*/;


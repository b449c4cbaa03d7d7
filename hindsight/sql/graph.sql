-- A bank's entities and memories drawn as graphs, its tags counted, and its memories over time
-- (engine/memory/graph.py, tags.py, timeseries.py).

-- entity_get --
-- One entity of the bank, with when a memory first and last mentioned it.
SELECT e.id, e.name, e.canonical, e.kind, e.mention_count,
       (SELECT min(m.created_at) FROM memory_entities me JOIN memories m ON m.id = me.memory_id
        WHERE me.entity_id = e.id AND m.bank_id = $1) AS first_seen,
       (SELECT max(m.created_at) FROM memory_entities me JOIN memories m ON m.id = me.memory_id
        WHERE me.entity_id = e.id AND m.bank_id = $1) AS last_seen
FROM entities e WHERE e.bank_id = $1 AND e.id = $2;

-- entity_recent_memories --
-- The bank's memories in recall that mention an entity, most recently stored first.
SELECT m.id, m.text, m.mentioned_at, m.created_at FROM memory_entities me JOIN memories m ON m.id = me.memory_id
WHERE me.entity_id = $2 AND m.bank_id = $1 AND NOT m.superseded AND m.invalidated_at IS NULL
ORDER BY m.created_at DESC, m.id LIMIT $3;

-- entity_seen_span --
-- When memories of the bank first and last mentioned each of the given entities.
SELECT me.entity_id, min(m.created_at) AS first_seen, max(m.created_at) AS last_seen
FROM memory_entities me JOIN memories m ON m.id = me.memory_id
WHERE m.bank_id = $1 AND me.entity_id = ANY($2::bigint[])
GROUP BY me.entity_id;

-- entity_graph_nodes --
-- The bank's most mentioned entities: the nodes of its entity graph.
SELECT id, name, kind, mention_count FROM entities WHERE bank_id = $1 AND mention_count > 0
ORDER BY mention_count DESC, name LIMIT $2;

-- entity_graph_edges --
-- Pairs of the given entities mentioned by one memory of the bank (in recall), how many memories
-- mention both, and when the last of them was stored; the pairs named most often first.
SELECT a.entity_id AS source, b.entity_id AS target, count(*) AS n, max(m.created_at) AS last_at
FROM memory_entities a
JOIN memory_entities b ON b.memory_id = a.memory_id AND b.entity_id > a.entity_id
JOIN memories m ON m.id = a.memory_id
WHERE m.bank_id = $1 AND a.entity_id = ANY($2::bigint[]) AND b.entity_id = ANY($2::bigint[])
  AND NOT m.superseded AND m.invalidated_at IS NULL
GROUP BY a.entity_id, b.entity_id HAVING count(*) >= $3
ORDER BY n DESC, source, target LIMIT $4;

-- memory_graph_sources --
-- Which of the given memories of the bank were extracted from which (a fact and its raw units).
SELECT f.fact_id, f.raw_id FROM fact_sources f JOIN memories m ON m.id = f.fact_id
WHERE m.bank_id = $1 AND f.fact_id = ANY($2::uuid[]) AND f.raw_id = ANY($2::uuid[]);

-- tags_of_memories --
-- The tags of the bank's memories in recall, each with how many carry it, most used first, under
-- the listing's conditions (bound after $3); each row carries how many tags match in all, and
-- an empty page one row of nulls with that count. The narrow copy (migration 015) is read.
WITH counted AS (
    SELECT t AS tag, count(*) AS n FROM memory_terms m, unnest(m.tags) t
    WHERE m.bank_id = $1 AND NOT m.superseded AND m.invalidated_at IS NULL /*where*/
    GROUP BY t
), page AS (
    SELECT * FROM counted ORDER BY n DESC, tag LIMIT $2 OFFSET $3
)
SELECT c.total, p.tag, p.n FROM (SELECT count(*) AS total FROM counted) c LEFT JOIN page p ON true
ORDER BY p.n DESC, p.tag;

-- tags_of_mental_models --
-- As tags_of_memories, for the tags of the bank's mental models.
WITH counted AS (
    SELECT t AS tag, count(*) AS n FROM mental_models m, unnest(m.tags) t
    WHERE m.bank_id = $1 /*where*/
    GROUP BY t
), page AS (
    SELECT * FROM counted ORDER BY n DESC, tag LIMIT $2 OFFSET $3
)
SELECT c.total, p.tag, p.n FROM (SELECT count(*) AS total FROM counted) c LEFT JOIN page p ON true
ORDER BY p.n DESC, p.tag;

-- memories_timeseries --
-- The bank's memories in recall by type and time bucket ($2: minute, hour or day, in UTC), since
-- $3, on the time /*column*/ says (a fixed column name of ours; created_at where it is unset).
SELECT date_trunc($2, coalesce(m./*column*/, m.created_at), 'UTC') AS bucket, m.kind, count(*) AS n
FROM memory_terms m
WHERE m.bank_id = $1 AND NOT m.superseded AND coalesce(m./*column*/, m.created_at) >= $3
GROUP BY 1, 2;

-- 010: the keyword arm reads Chinese, Japanese and Korean.
-- Why: PostgreSQL's text search parser splits words at spaces and punctuation, which CJK text
-- does not have: a whole Chinese sentence became one lexeme, so a Chinese query matched nothing
-- and keyword-only recall in Chinese returned no results at all (bilingual benchmark, evidence
-- recall@10 of the keyword arm 0.00 in Chinese against 0.62 in English). Every run of CJK
-- characters now also yields its characters and overlapping character pairs as lexemes (the
-- query side splits a question the same way, engine/cjk.py): a pair carries most Chinese words
-- and names, a single character the rest; rare pairs weigh most, as rare English words do. A
-- segmenter (jieba) was the alternative: it needs Python at write time, Chinese only, and its
-- dictionary; n-grams are computed here for Japanese and Korean too, at no cost to English
-- (its lexemes are unchanged). The grams carry positions of their own so that ranking by cover
-- density (document search) counts them.

CREATE FUNCTION cjk_grams(t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(to_tsvector('simple', string_agg(g, ' ' ORDER BY run, i, n)), ''::tsvector)
    FROM (
        SELECT r.run, i, k.n, substr(r.m[1], i, k.n) AS g
        FROM regexp_matches(t, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', 'g')
             WITH ORDINALITY AS r(m, run),
             generate_series(1, length(r.m[1])) AS i,
             (VALUES (1), (2)) AS k(n)
        WHERE i + k.n - 1 <= length(r.m[1])
    ) grams
$$;

ALTER TABLE memories DROP COLUMN tsv;
ALTER TABLE memories ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', text) || cjk_grams(text)) STORED;
CREATE INDEX memories_tsv ON memories USING gin (tsv) WITH (gin_pending_list_limit = 256);

ALTER TABLE chunks DROP COLUMN tsv;
ALTER TABLE chunks ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', coalesce(headline, '') || ' ' || text)
                         || cjk_grams(coalesce(headline, '') || ' ' || text)) STORED;
CREATE INDEX chunks_tsv ON chunks USING gin (tsv) WITH (gin_pending_list_limit = 256);

-- The lexeme counts (migration 004) follow the new vectors.
TRUNCATE bank_lexemes;
INSERT INTO bank_lexemes (bank_id, lexeme, n)
SELECT bank_id, lexeme, count(*) FROM (
    SELECT m.bank_id, l AS lexeme FROM memories m, unnest(tsvector_to_array(m.tsv)) l
    UNION ALL
    SELECT m.bank_id, '' FROM memories m
) x GROUP BY bank_id, lexeme;

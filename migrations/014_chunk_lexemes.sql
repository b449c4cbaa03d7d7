-- 014: per-bank document frequencies of the lexemes of document chunks, as 004 keeps for memories.
-- Why: document search ranked its keyword arm with ts_rank over every chunk holding any query
-- word, blind to how rare a word is: a page sharing a speaker's name with the question ranked
-- like one sharing the rare word it is about, and on a bank of 100,000 chunks ranking every match
-- took ~45 ms a phrase. Weighted by inverse document frequency (read here, one index lookup a
-- word), and reading only the chunks holding the rarest words first (engine/rag.py), LoCoMo's
-- conversations as a knowledge base find the evidence in the fused top 10 more often (bench/
-- README.md, "Documents: the keyword arm weighs rare words").
-- `n` is the number of the bank's chunks whose tsv holds `lexeme`; the row with the empty lexeme
-- holds the bank's chunk count. Statement-level triggers keep the counts exact for every path
-- that inserts or deletes chunks (COPY on import, a document replaced or deleted, cascades from a
-- deleted bank, bank imports). A chunk's text is never updated in place (re-embedding changes its
-- vector only), so there is no UPDATE trigger. Writers of chunks take the bank's write lock
-- first (engine/runtime.lock_writes), so the order of row locks cannot deadlock.

CREATE TABLE chunk_lexemes (
    bank_id text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    lexeme  text NOT NULL,
    n       integer NOT NULL,
    PRIMARY KEY (bank_id, lexeme)
);

CREATE FUNCTION chunk_lexemes_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_lexemes (bank_id, lexeme, n)
    SELECT bank_id, lexeme, sum(c)::int FROM (
        SELECT r.bank_id, l AS lexeme, 1 AS c FROM added r, unnest(tsvector_to_array(r.tsv)) l
        UNION ALL
        SELECT r.bank_id, '', 1 FROM added r
    ) x GROUP BY bank_id, lexeme ORDER BY bank_id, lexeme
    ON CONFLICT (bank_id, lexeme) DO UPDATE SET n = chunk_lexemes.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION chunk_lexemes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_lexemes b SET n = b.n - x.c
    FROM (
        SELECT bank_id, lexeme, sum(c)::int AS c FROM (
            SELECT r.bank_id, l AS lexeme, 1 AS c FROM removed r, unnest(tsvector_to_array(r.tsv)) l
            UNION ALL
            SELECT r.bank_id, '', 1 FROM removed r
        ) y GROUP BY bank_id, lexeme
    ) x
    WHERE b.bank_id = x.bank_id AND b.lexeme = x.lexeme;
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_lexemes_add AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION chunk_lexemes_add();
CREATE TRIGGER chunks_lexemes_remove AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION chunk_lexemes_remove();

INSERT INTO chunk_lexemes (bank_id, lexeme, n)
SELECT bank_id, lexeme, count(*) FROM (
    SELECT c.bank_id, l AS lexeme FROM chunks c, unnest(tsvector_to_array(c.tsv)) l
    UNION ALL
    SELECT c.bank_id, '' FROM chunks c
) x GROUP BY bank_id, lexeme;

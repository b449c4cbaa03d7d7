-- 004: per-bank document frequencies of full-text lexemes.
-- Why: ranking the keyword arm by ts_rank_cd ignores how rare a word is, so a turn that shares a
-- speaker's name with the query ranked like one that shares the rare word the question is about
-- (LoCoMo evidence recall@10 of the keyword arm alone: 0.52 with ts_rank_cd, 0.63 weighted by
-- inverse document frequency). Counting each query word's matches at query time cost ~60 ms on
-- a 100,000-memory bank; kept here, a word's frequency is one index lookup.
-- `n` is the number of the bank's memories whose tsv holds `lexeme`; the row with the empty
-- lexeme (never a real lexeme) holds the bank's memory count, the N of the IDF formula. Rows
-- that fall to 0 stay (a word the bank once had; readers treat 0 as absent).
-- Statement-level triggers with transition tables keep the counts exact for every path that
-- inserts or deletes memories (COPY, cascades from a deleted bank, imports). Memory text is never
-- updated in place (facts supersede units instead), so there is no UPDATE trigger.
-- Writers of one bank serialise on these rows; they take the bank's write lock first
-- (engine/banks.py lock_writes) so the order of row locks cannot deadlock.

CREATE TABLE bank_lexemes (
    bank_id text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    lexeme  text NOT NULL,
    n       integer NOT NULL,
    PRIMARY KEY (bank_id, lexeme)
);

CREATE FUNCTION bank_lexemes_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bank_lexemes (bank_id, lexeme, n)
    SELECT bank_id, lexeme, sum(c)::int FROM (
        SELECT r.bank_id, l AS lexeme, 1 AS c FROM added r, unnest(tsvector_to_array(r.tsv)) l
        UNION ALL
        SELECT r.bank_id, '', 1 FROM added r
    ) x GROUP BY bank_id, lexeme ORDER BY bank_id, lexeme
    ON CONFLICT (bank_id, lexeme) DO UPDATE SET n = bank_lexemes.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION bank_lexemes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_lexemes b SET n = b.n - x.c
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

CREATE TRIGGER memories_lexemes_add AFTER INSERT ON memories
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION bank_lexemes_add();
CREATE TRIGGER memories_lexemes_remove AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION bank_lexemes_remove();

INSERT INTO bank_lexemes (bank_id, lexeme, n)
SELECT bank_id, lexeme, count(*) FROM (
    SELECT m.bank_id, l AS lexeme FROM memories m, unnest(tsvector_to_array(m.tsv)) l
    UNION ALL
    SELECT m.bank_id, '' FROM memories m
) x GROUP BY bank_id, lexeme;

"""Embeddings stay in their row (migration 013): recall computes distances from the table for
hundreds of rows a call, and a vector kept out of line was read back through the TOAST index each
time. A long text leaves the row before its vector does. Checked with pg_column_toast_chunk_id,
which is NULL for a value stored in the row."""

from __future__ import annotations

from test_entity_names import db

from support import import_docs

OUT_OF_LINE = """SELECT count(*) FILTER (WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL) AS vectors,
                        count(*) FILTER (WHERE pg_column_toast_chunk_id(text) IS NOT NULL
                                           OR pg_column_toast_chunk_id(tsv) IS NOT NULL) AS texts,
                        count(*) AS n
                 FROM {table} WHERE bank_id = $1"""

# A turn the length LoCoMo's are: with its 1.5 KB vector the row passes the default 2 KB threshold.
TURN = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful, {i} stories!"
# Words that do not repeat, so neither the text nor its tsvector compresses below the row's room.
LONG = " ".join(f"w{i * 7919 % 100_003}x{i}" for i in range(900))


def test_memory_vectors_stay_in_the_row(api, bank, pg_url):
    items = [{"content": TURN.format(i=i) + " " + "and more " * 10} for i in range(20)] + [{"content": LONG}]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    (row,) = db(pg_url, OUT_OF_LINE.format(table="memories"), bank)
    assert row["n"] >= 21 and row["vectors"] == 0
    assert row["texts"] >= 1  # the long text (or its tsvector) left the row, not the vector
    # ...and recall reads them back as before.
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "support group stories"})
    assert r.status_code == 200 and "support group" in r.json()["results"][0]["text"]


def test_chunk_vectors_stay_in_the_row(api, bank, pg_url):
    text = "\n\n".join(f"Section {i}. " + LONG[i * 300 : i * 300 + 900] for i in range(8))
    res = import_docs(api, bank, files=[{"name": "long.txt", "text": text}])
    assert res["status"] == "succeeded", res
    (row,) = db(pg_url, OUT_OF_LINE.format(table="chunks"), bank)
    assert row["n"] >= 2 and row["vectors"] == 0


def test_a_new_dimension_keeps_vectors_in_the_row(api, pg_url):
    """Changing the embedding model to another dimension retypes the column, which brings the
    type's default storage back; the retype statement sets it again."""
    from hindsight.db.sql import Q, fill

    table = "retype_probe"
    db(pg_url, f"CREATE TABLE {table} (embedding vector(384))")
    try:
        db(pg_url, f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN")
        db(pg_url, fill(Q.embedding_retype, table=table, dim="16"))
        (row,) = db(
            pg_url,
            "SELECT format_type(atttypid, atttypmod) AS type, attstorage FROM pg_attribute"
            " WHERE attrelid = $1::regclass AND attname = 'embedding'",
            table,
        )
        assert (row["type"], row["attstorage"]) == ("vector(16)", b"m")
    finally:
        db(pg_url, f"DROP TABLE {table}")

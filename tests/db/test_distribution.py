"""The live schema, after every migration, is laid out for Citus as db/distribution.py says: each
table placed (distributed by its bank, reference, or local); every primary key, unique key and
unique index of a distributed table includes its bank; foreign keys only between distributed
tables on their bank, or to reference tables; every sequence a bigint; every trigger on a
distributed table planned for."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hindsight.db.distribution import DISTRIBUTED, LOCAL, REFERENCE, TRIGGERS, column

from conftest import migrated_database


async def _nothing(conn) -> None:
    pass


@pytest.fixture(scope="module")
def schema(pg_url):
    url = migrated_database(pg_url, "distribution", _nothing)

    async def read() -> dict:
        conn = await asyncpg.connect(url)
        try:
            tables = {
                r["relname"]
                for r in await conn.fetch(
                    "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p')"
                )
            }
            nullable = {
                (r["table_name"], r["column_name"]): r["is_nullable"] == "YES"
                for r in await conn.fetch(
                    "SELECT table_name, column_name, is_nullable FROM information_schema.columns "
                    "WHERE table_schema = current_schema()"
                )
            }
            constraints = await conn.fetch(
                """SELECT con.conname, con.contype, con.conrelid::regclass::text AS tbl,
                          con.confrelid::regclass::text AS ref,
                          ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(att, n)
                                JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.att ORDER BY k.n) AS cols,
                          ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(att, n)
                                JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.att ORDER BY k.n) AS refcols
                   FROM pg_constraint con
                   WHERE con.connamespace = current_schema()::regnamespace AND con.contype IN ('p', 'u', 'f', 'x')"""
            )
            unique_indexes = await conn.fetch(
                """SELECT i.indexrelid::regclass::text AS name, i.indrelid::regclass::text AS tbl,
                          pg_get_indexdef(i.indexrelid) AS def,
                          ARRAY(SELECT a.attname FROM unnest(i.indkey) k(att)
                                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.att) AS cols
                   FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                   WHERE c.relnamespace = current_schema()::regnamespace AND i.indisunique"""
            )
            triggers = await conn.fetch(
                "SELECT tgname, tgrelid::regclass::text AS tbl FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
            )
            sequences = await conn.fetch(
                "SELECT sequencename, data_type::text AS type FROM pg_sequences WHERE schemaname = current_schema()"
            )
        finally:
            await conn.close()
        return {
            "tables": tables,
            "nullable": nullable,
            "constraints": constraints,
            "unique_indexes": unique_indexes,
            "triggers": triggers,
            "sequences": sequences,
        }

    return asyncio.run(read())


def test_every_table_is_placed_once(schema):
    placed = list(DISTRIBUTED) + list(REFERENCE) + list(LOCAL)
    assert len(placed) == len(set(placed)), "a table placed twice in db/distribution.py"
    assert schema["tables"] - set(placed) == set(), "tables db/distribution.py does not place"
    assert set(placed) - schema["tables"] == set(), "db/distribution.py places tables that do not exist"


def test_distributed_tables_have_their_bank_in_every_row(schema):
    for table in DISTRIBUTED:
        assert (table, column(table)) in schema["nullable"], f"{table} has no {column(table)}"
        assert not schema["nullable"][(table, column(table))], f"{table}.{column(table)} may be NULL"


def test_every_key_of_a_distributed_table_includes_its_bank(schema):
    wrong = [
        f"{c['tbl']}: {c['conname']} {c['cols']}"
        for c in schema["constraints"]
        if c["contype"] in ("p", "u", "x") and c["tbl"] in DISTRIBUTED and column(c["tbl"]) not in c["cols"]
    ]
    wrong += [
        f"{i['tbl']}: {i['def']}"
        for i in schema["unique_indexes"]
        if i["tbl"] in DISTRIBUTED and column(i["tbl"]) not in i["cols"]
    ]
    assert not wrong, "keys Citus could not enforce:\n" + "\n".join(wrong)


def test_foreign_keys_are_ones_citus_allows(schema):
    wrong = []
    for c in schema["constraints"]:
        if c["contype"] != "f":
            continue
        what = f"{c['tbl']}.{c['conname']} {c['cols']} -> {c['ref']} {c['refcols']}"
        if c["tbl"] in REFERENCE + LOCAL:
            if c["ref"] not in REFERENCE:
                wrong.append(f"{what}: a reference table may refer only to reference tables")
        elif c["ref"] in DISTRIBUTED:
            pairs = dict(zip(c["cols"], c["refcols"]))
            if pairs.get(column(c["tbl"])) != column(c["ref"]):
                wrong.append(f"{what}: between distributed tables, the bank must match the bank")
        elif c["ref"] not in REFERENCE:
            wrong.append(f"{what}: a distributed table may refer only to distributed or reference tables")
    assert not wrong, "\n".join(wrong)


def test_sequences_are_bigint(schema):
    """A sequence feeding a distributed table must be a bigint for Citus to hand out its values
    from the workers (each gets a range of its own)."""
    assert all(s["type"] == "bigint" for s in schema["sequences"]), [dict(s) for s in schema["sequences"]]


def test_every_trigger_on_a_distributed_table_has_a_plan(schema):
    on_distributed = {t["tgname"] for t in schema["triggers"] if t["tbl"] in DISTRIBUTED}
    assert on_distributed - set(TRIGGERS) == set(), "triggers with no plan in db/distribution.py TRIGGERS"
    assert set(TRIGGERS) - on_distributed == set(), "TRIGGERS names triggers that do not exist"

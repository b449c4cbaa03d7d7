"""Every complete named statement is valid against the real schema: PostgreSQL parses and plans
each one (prepare, in a transaction rolled back), including those no other test happens to run."""

from __future__ import annotations

import asyncpg

from hindsight.db.pool import migrate
from hindsight.db.sql import Q

from support import BANK_TABLES, WITHOUT_BANK_COLUMN

# Statements that change the schema or the session run where they are used; preparing one here
# would do nothing useful (DDL is not planned) or need their targets filled in. VACUUM cannot be
# prepared (nor run in a transaction): tests/contract/test_forgetting.py runs it.
NOT_PREPARED = ("CREATE ", "ALTER ", "DROP ", "RESET ", "SET ", "VACUUM ")


async def test_every_statement_prepares(pg_url):
    await migrate(pg_url)
    conn = await asyncpg.connect(pg_url)
    try:
        async with conn.transaction():
            await conn.execute(Q.selfcheck_table)  # the self-check's statements need their table
            prepared = 0
            for name in Q.names():
                sql = getattr(Q, name)
                if "/*" in sql or Q.reasons[name].startswith("Fragment") or sql.startswith(NOT_PREPARED):
                    continue
                try:
                    await conn.prepare(sql)
                except asyncpg.PostgresError as exc:
                    raise AssertionError(f"{name}: {exc}") from None
                prepared += 1
            assert prepared > 90
            raise _Rollback
    except _Rollback:
        pass
    finally:
        await conn.close()


class _Rollback(Exception):
    pass


async def test_the_bank_scope_check_knows_every_bank_owned_table(pg_url):
    """tests/unit/test_sql_bank_scope.py holds statements on these tables to their bank: a new
    table with a bank column (or a link to such a table) must join its list."""
    await migrate(pg_url)
    conn = await asyncpg.connect(pg_url)
    try:
        with_bank = {
            r[0]
            for r in await conn.fetch(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND column_name = 'bank_id'"
            )
        }
        linked = {
            r[0]
            for r in await conn.fetch(
                "SELECT DISTINCT c.conrelid::regclass::text FROM pg_constraint c "
                "WHERE c.contype = 'f' AND c.confrelid::regclass::text = ANY($1::text[])",
                sorted(with_bank | {"banks"}),
            )
        }
    finally:
        await conn.close()
    assert BANK_TABLES == with_bank | linked | {"banks"}
    assert WITHOUT_BANK_COLUMN == BANK_TABLES - with_bank - {"banks"}

"""Every statement on bank-owned rows names its bank.

Why: a key scoped to bank A once corrupted bank B through a statement keyed by memory id alone
(`memory_release_entities` ran before the not-found check, with B's memory id sent to A's URL).
Ids are unguessable, but they are not secrets: they travel in results, logs and exports. So
the rule is checked over the SQL itself, with PostgreSQL's own parser (pglast), not by
reading code paths:

- a statement that reads or writes a bank-owned table compares some `bank_id` (or the `banks`
  row's `id`) with a parameter, or inserts a parameter as the new rows' bank;
- an UPDATE or DELETE whose target has a `bank_id` column names that target's bank in its own
  WHERE, so no join can widen it.

Tables without a bank column (links such as memory_entities) are reached through one that has
it, which the first rule makes the statement name. The few statements that work across banks
on purpose are listed in ACROSS_BANKS with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pglast
import pytest
from pglast import ast

from hindsight.db.sql import Q

from support import BANK_TABLES, WITHOUT_BANK_COLUMN

ACROSS_BANKS = {
    "operation_claim": "the worker claims due work of any bank; each row it returns carries its bank",
    "operation_release": "a stopping worker hands back its own claims (by id and its lease), whatever their banks",
    "mental_model_sweep": "the scheduler finds stale models in every bank; each refresh it queues names its bank",
    "operations_pending_by_type": "the /metrics queue gauge counts work by type and status, no bank's rows",
    "import_ids_taken": "ids are global primary keys: an import must know which are taken in any bank",
    "reembed_memories_first": "a new embedding model re-embeds every bank's vectors at start-up",
    "reembed_memories_after": "as reembed_memories_first",
    "reembed_memories_update": "as reembed_memories_first",
    "reembed_chunks_first": "as reembed_memories_first",
    "reembed_chunks_after": "as reembed_memories_first",
    "reembed_chunks_update": "as reembed_memories_first",
    "reembed_mental_models_first": "as reembed_memories_first",
    "reembed_mental_models_after": "as reembed_memories_first",
    "reembed_mental_models_update": "as reembed_memories_first",
    "table_rows": "counts a table to re-embed, for the progress log",
    "oauth_code_get": "by the hash of a 256-bit secret the client holds; the grant's bank it returns is then named",
    "oauth_token_get": "by the hash of a 256-bit secret the client holds; its bank is checked against the endpoint's",
    "oauth_codes_purge": "drops every bank's codes a day past their expiry",
    "oauth_tokens_purge": "drops every bank's tokens a day past their expiry",
    "retention_banks": "the scheduler finds the banks with a retention policy; each erasure it runs names its bank",
    "vacuum_after_erasure": "VACUUM works on whole tables, after an erasure in any bank",
    "vacuum_full_after_erasure": "as vacuum_after_erasure",
    "audit_list_all": "an admin reads every bank's audit records (admins only: engine/facade.require_audit)",
    "audit_count_all": "as audit_list_all",
    "audit_export_all": "as audit_list_all",
    "audit_prune": "drops every bank's audit records older than the log keeps",
    "oauth_clients_list": "an admin lists every OAuth client, each with its live connections counted over every bank",
}

# Statements whose slots leave them unparsable get a stand-in for each slot (the fragment that
# goes there, or a fixed name), so that their own text is still checked; other slots are dropped.
STAND_INS = {
    "table": "memories",
    "rows": "memory_terms",  # the keyword arm's rows (engine/recall.keyword_rows), or memories
    "columns": "id",
    "column": "created_at",  # the time column a memories time series buckets on (engine/memory/timeseries.py)
    "candidates": Q.recall_keyword_own_candidates,
    "own": Q.recall_keyword_own,
    "match": "$2",
    "score": "1",
    "relevance": "1",
    "linked_names": Q.memory_linked_names,
    "keyword": "0",
    "share": "0",
    "window": "NULL",
    # the semantic arm's query: its vector and how many of the bank's rows it reads
    "vector": "$2",
    "read": "1",
    # recall_ranked: its scored columns and the semantic arm it may run
    "scores": Q.recall_scores_columns,
    "base": Q.recall_base,
    "semantic": Q.recall_semantic_sort,
    # Document search's keyword statement: a branch a phrase, whose candidates are chunk seeds.
    "branches": Q.chunk_keyword_branch.replace("/*candidates*/", Q.chunk_keyword_seed + " c"),
    "phrase": "1",
    "words": "$2::text[]",
    "limit": "1",
}


def _nodes(node) -> Iterator[ast.Node]:
    if isinstance(node, (list, tuple)):
        for x in node:
            yield from _nodes(x)
    elif isinstance(node, ast.Node):
        yield node
        for name in type(node).__slots__:
            yield from _nodes(getattr(node, name))


def _column(node) -> str | None:
    if isinstance(node, ast.ColumnRef) and isinstance(node.fields[-1], ast.String):
        return node.fields[-1].sval
    return None


def _is_param(node) -> bool:
    while isinstance(node, ast.TypeCast):
        node = node.arg
    return isinstance(node, ast.ParamRef)


def _bank_predicates(node, banks_alias: set[str]) -> Iterator[ast.ColumnRef]:
    """Column references compared with a parameter (`=` or `= ANY`) that name a bank."""
    for n in _nodes(node):
        if not (isinstance(n, ast.A_Expr) and n.name and n.name[-1].sval == "="):
            continue
        for col, other in ((n.lexpr, n.rexpr), (n.rexpr, n.lexpr)):
            name = _column(col)
            if not _is_param(other) or name is None:
                continue
            qualifier = col.fields[0].sval if len(col.fields) > 1 else None
            if name == "bank_id" or (
                name == "id" and (qualifier in banks_alias or (qualifier is None and banks_alias))
            ):
                yield col


def _inserts_bank_param(stmt: ast.InsertStmt) -> bool:
    cols = [c.name for c in stmt.cols or ()]
    key = "id" if stmt.relation.relname == "banks" else "bank_id"
    if key not in cols:
        return False
    i = cols.index(key)
    select = stmt.selectStmt
    if select.valuesLists:
        return all(_is_param(row[i]) for row in select.valuesLists)
    return bool(select.targetList) and _is_param(select.targetList[i].val)


def _statement(name: str):
    sql = getattr(Q, name)
    try:
        return pglast.parse_sql(sql)[0].stmt
    except pglast.parser.ParseError:
        while "/*" in sql:
            sql = re.sub(r"/\*([a-z_]+)\*/", lambda m: STAND_INS.get(m.group(1), ""), sql)
        return pglast.parse_sql(sql)[0].stmt


def scope_problem(name: str) -> str | None:
    """What is wrong with statement `name`, or None."""
    stmt = _statement(name)
    ranges = [n for n in _nodes(stmt) if isinstance(n, ast.RangeVar)]
    tables = {r.relname for r in ranges} & BANK_TABLES
    if not tables:
        return None
    banks_alias = {r.alias.aliasname if r.alias else "banks" for r in ranges if r.relname == "banks"}
    named = any(True for _ in _bank_predicates(stmt, banks_alias))
    if isinstance(stmt, ast.InsertStmt) and stmt.relation.relname in BANK_TABLES - WITHOUT_BANK_COLUMN:
        named = named or _inserts_bank_param(stmt)
    if not named:
        return f"touches {sorted(tables)} without naming a bank"
    if isinstance(stmt, (ast.UpdateStmt, ast.DeleteStmt)) and stmt.relation.relname not in WITHOUT_BANK_COLUMN:
        target = stmt.relation.alias.aliasname if stmt.relation.alias else stmt.relation.relname
        for col in _bank_predicates(stmt.whereClause, {target} if stmt.relation.relname == "banks" else set()):
            if len(col.fields) == 1 or col.fields[0].sval == target:
                return None
        return f"{type(stmt).__name__} of {stmt.relation.relname} without its bank in its own WHERE"
    return None


def _checked() -> list[str]:
    return [
        n
        for n in Q.names()
        if not Q.reasons[n].startswith("Fragment") and not getattr(Q, n).startswith(("CREATE ", "ALTER ", "DROP "))
    ]


@pytest.mark.parametrize("name", _checked())
def test_statement_names_its_bank(name):
    problem = scope_problem(name)
    if name in ACROSS_BANKS:
        assert problem is not None, f"{name} names its bank now: take it off ACROSS_BANKS"
    else:
        assert problem is None, f"{name}: {problem}"


def test_fragments_name_the_bank_where_they_read_memories():
    """Fragments are not statements; those reading a bank-owned table must carry the bank too."""
    for name in Q.names():
        sql = getattr(Q, name)
        if Q.reasons[name].startswith("Fragment") and any(
            f" FROM {t}" in sql for t in ("memories", "memory_terms", "/*rows*/")
        ):
            assert "bank_id = $1" in sql, name


@pytest.mark.parametrize(
    "sql, problem",
    [
        # the bug this file exists for: entity counts of any bank, by memory id alone
        (
            "UPDATE entities e SET mention_count = 0 FROM (SELECT entity_id FROM memory_entities "
            "WHERE memory_id = ANY($1::uuid[])) x WHERE x.entity_id = e.id",
            "without naming a bank",
        ),
        # named, but only in a join: the UPDATE's own rows are not held to it
        (
            "UPDATE chunks SET text = '' FROM documents d WHERE d.bank_id = $1 AND chunks.document_id = $2",
            "without its bank in its own WHERE",
        ),
        ("DELETE FROM chunks WHERE document_id = $1", "without naming a bank"),
        ("SELECT 1 FROM fact_sources f WHERE f.raw_id = $1", "without naming a bank"),
        ("INSERT INTO memory_documents (bank_id, id) VALUES ('x', $1)", "without naming a bank"),
        ("SELECT 1 FROM memories WHERE bank_id = $1 AND id = $2", None),
        ("DELETE FROM banks WHERE id = $1", None),
        ("INSERT INTO llm_usage (bank_id, operation) VALUES ($1, $2)", None),
        ("SELECT 1 FROM api_keys WHERE id = $1", None),
    ],
)
def test_the_checker_itself(sql, problem, monkeypatch):
    monkeypatch.setattr(Q, "_sql", {**Q._sql, "probe": sql})
    monkeypatch.setattr(Q, "reasons", {**Q.reasons, "probe": "a probe"})
    found = scope_problem("probe")
    assert (found is None) if problem is None else (problem in (found or "")), found

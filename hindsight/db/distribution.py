"""How the schema lies on a Citus cluster, sharded by bank (docs/scaling.md, "Sharding by bank").

Every table of a bank's rows is hash-distributed by its bank (`bank_id`; `banks` by its `id`) and
colocated with `banks`, so that each statement on one bank (all of them name it,
tests/unit/test_sql_bank_scope.py) runs on one node, joins included. Tables of no bank are
reference tables, copied to every node; the record of migrations stays on the coordinator.
tests/db/test_distribution.py checks the live schema against this: every table placed, every
key of a distributed table includes its bank, foreign keys only where Citus allows them, and
every trigger on a distributed table has a plan here. `hindsight docs` writes the Citus
statements into docs/scaling.md from it.
"""

from __future__ import annotations

# In the order Citus needs: a table after those its foreign keys refer to.
REFERENCE = (
    "api_keys",
    "embedding_model",
    "oauth_clients",
    "oauth_requests",
    "oauth_grants",
    "oauth_codes",
    "oauth_tokens",
)
DISTRIBUTED = (
    "banks",
    "memories",
    "memory_terms",
    "memory_documents",
    "memory_versions",
    "entities",
    "memory_entities",
    "fact_sources",
    "bank_lexemes",
    "documents",
    "chunks",
    "chunk_lexemes",
    "operations",
    "document_uploads",
    "bank_files",
    "bank_turns",
    "mental_models",
    "mental_model_versions",
    "llm_usage",
    "bank_positions",
    "directives",
    "webhooks",
    "knowledge_nodes",
    "audit_logs",
)
LOCAL = ("schema_migrations",)

# Each trigger on a distributed table, and how it runs under Citus. Citus refuses triggers on
# distributed tables unless citus.enable_unsafe_triggers is on; then each shard has them, and a
# trigger is safe when what it writes lies in the same bank, so on the same node (colocated).
TRIGGERS = {
    "memories_lexemes_add": "writes the bank's word counts (bank_lexemes), colocated: kept, with unsafe triggers on",
    "memories_lexemes_remove": "as memories_lexemes_add",
    "memories_terms_add": "writes the bank's rows of memory_terms, colocated: kept, with unsafe triggers on",
    "memories_terms_remove": "as memories_terms_add",
    "memories_terms_change": "as memories_terms_add",
    "memories_terms_clear": "TRUNCATE of memories: the server never truncates; dropped under Citus",
    "chunks_lexemes_add": "writes the bank's chunk word counts (chunk_lexemes), colocated: kept, with unsafe triggers on",
    "chunks_lexemes_remove": "as chunks_lexemes_add",
    "operations_queued_turn": (
        "a deferred constraint trigger writing the bank's turn (bank_turns, colocated); kept with unsafe "
        "triggers on, or the enqueuing statements write the turn themselves"
    ),
    "operations_requeued_turn": "as operations_queued_turn",
    "memory_entities_unlinked": (
        "deletes the bank's entities left without a link (entities, colocated; the statement names the "
        "bank since migration 021): kept, with unsafe triggers on"
    ),
}


def column(table: str) -> str:
    """The distribution column of a distributed table."""
    return "id" if table == "banks" else "bank_id"


def citus_statements() -> str:
    """The statements that lay an empty, migrated database out on a Citus coordinator."""
    lines = ["SET citus.enable_unsafe_triggers = on;  -- the triggers planned below, each within one bank"]
    lines += [f"SELECT create_reference_table('{t}');" for t in REFERENCE]
    lines.append("SELECT create_distributed_table('banks', 'id');")
    lines += [
        f"SELECT create_distributed_table('{t}', '{column(t)}', colocate_with => 'banks');"
        for t in DISTRIBUTED
        if t != "banks"
    ]
    return "```sql\n" + "\n".join(lines) + "\n```\n"


def triggers_table() -> str:
    rows = ["| Trigger | Under Citus |", "|---|---|"]
    rows += [f"| `{name}` | {plan} |" for name, plan in TRIGGERS.items()]
    return "\n".join(rows) + "\n"

"""CLI for curating memories: show one, edit it, invalidate or restore it, and read its history
(REST calls to a running server). Retain's --supersedes and recall's --as-of live beside those
commands in main.py."""

from __future__ import annotations

import click

from hindsight.cli.client import Client, make_group, out, pass_client
from hindsight.cli.options import body, fields
from hindsight.engine.memory.curation import MemoryUpdate


def register(cli: click.Group) -> None:
    memories = make_group(cli, "memories", "Show, correct, invalidate or restore one memory, and its history.")

    @memories.command("get")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @pass_client
    def memories_get(c: Client, bank_id, memory_id):
        """Show one memory, with its time of truth and state."""
        out(c.call("GET", f"/v1/banks/{bank_id}/memories/{memory_id}"))

    @memories.command("update")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @fields(
        MemoryUpdate,
        "text",
        "context",
        "type",
        "occurred_start",
        "occurred_end",
        "valid_from",
        "valid_to",
        "reason",
        entities="--entity",
        tags="--tag",
    )
    @pass_client
    def memories_update(c: Client, bank_id, memory_id, **values):
        """Correct one memory; only the options given change."""
        out(c.call("PATCH", f"/v1/banks/{bank_id}/memories/{memory_id}", json=body(values)))

    @memories.command("invalidate")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @click.option("--reason", default=None, help="Why: recorded in its history.")
    @pass_client
    def memories_invalidate(c: Client, bank_id, memory_id, reason):
        """Retract a wrong memory: kept for audit, left out of recall, reflect and mental models."""
        body = {"reason": reason} if reason else None
        out(c.call("POST", f"/v1/banks/{bank_id}/memories/{memory_id}/invalidate", json=body))

    @memories.command("restore")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @click.option("--reason", default=None, help="Why: recorded in its history.")
    @pass_client
    def memories_restore(c: Client, bank_id, memory_id, reason):
        """Make an invalidated or superseded memory valid again."""
        body = {"state": "valid", **({"reason": reason} if reason else {})}
        out(c.call("PATCH", f"/v1/banks/{bank_id}/memories/{memory_id}", json=body))

    @memories.command("history")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @click.option("--json", "as_json", is_flag=True, help="Print the full JSON.")
    @pass_client
    def memories_history(c: Client, bank_id, memory_id, as_json):
        """Every version of one memory: when, what, why and who."""
        h = c.call("GET", f"/v1/banks/{bank_id}/memories/{memory_id}/history")
        if as_json:
            out(h)
            return
        for v in h["versions"]:
            who = f" by {v['actor']}" if v.get("actor") else ""
            why = f" ({v['reason']})" if v.get("reason") else ""
            click.echo(f"v{v['version']}  {(v.get('at') or '')[:19]}  {v['action']}{who}{why}")
            for field, (before, after) in v["changes"].items():
                click.echo(f"      {field}: {before!r} -> {after!r}")
        if h["supersedes"]:
            click.echo(f"supersedes: {', '.join(h['supersedes'])}")

"""CLI for forgetting: one memory, everything about a person, what is no longer true, what was
retained under a document_id (REST calls to a running server; docs/privacy.md says what each
reaches)."""

from __future__ import annotations

import click

from hindsight.cli.client import Client, make_group, out, pass_client
from hindsight.cli.options import body, fields
from hindsight.engine.forgetting.schemas import ForgetEntity, ForgetMemory, PurgeMemories


def _summary(r: dict) -> None:
    """What an erasure removed (or would), in a few lines; --json prints it all."""
    verb = "would forget" if r.get("dry_run") else "forgot"
    n = r["memories"]
    click.echo(f"{verb} {n} {'memory' if n == 1 else 'memories'} of bank {r['bank_id']}")
    for m in r.get("would_forget") or []:
        click.echo(f"  {m['id']}  {m['why']:<8} {m['text'][:100]}")
    if r.get("sources_kept"):
        click.echo(f"raw units kept (--include-sources forgets them): {', '.join(r['sources_kept'])}")
    if r.get("entities_removed"):
        click.echo(f"entities removed: {r['entities_removed']}")
    if r.get("mental_models_stale"):
        click.echo(f"mental models to refresh without it: {', '.join(r['mental_models_stale'])}")
    if r.get("mental_models_withdrawn"):
        click.echo(f"mental model content withdrawn: {', '.join(r['mental_models_withdrawn'])}")
    if not r.get("dry_run") and r.get("vacuum_within_seconds") is not None:
        click.echo(f"the database's copies are vacuumed within about {r['vacuum_within_seconds']:g} s")


def _show(r: dict, as_json: bool) -> None:
    if as_json:
        out(r)
    else:
        _summary(r)


def register(cli: click.Group) -> None:
    forget = make_group(
        cli, "forget", "Forget for good: a memory, everything about a person, what is no longer true, a document."
    )
    as_json = click.option("--json", "as_json", is_flag=True, help="Print the full JSON answer.")

    @forget.command("memory")
    @click.argument("bank_id")
    @click.argument("memory_id")
    @fields(ForgetMemory, "include_sources", "dry_run")
    @as_json
    @pass_client
    def forget_memory(c: Client, bank_id, memory_id, as_json, **values):
        """Forget one memory, the facts extracted from it and its history."""
        params = {k: "true" for k, v in body(values).items() if v}
        _show(c.call("DELETE", f"/v1/banks/{bank_id}/memories/{memory_id}", params=params), as_json)

    @forget.command("entity")
    @click.argument("bank_id")
    @click.argument("name")
    @fields(ForgetEntity, "dry_run")
    @as_json
    @pass_client
    def forget_entity(c: Client, bank_id, name, as_json, **values):
        """Forget every memory that names NAME (a person, a place, ...); try --dry-run first."""
        _show(c.call("POST", f"/v1/banks/{bank_id}/entities/forget", json={"name": name, **body(values)}), as_json)

    @forget.command("purge")
    @click.argument("bank_id")
    @click.option("--invalidated/--no-invalidated", default=True, show_default=True, help="Invalidated memories.")
    @click.option("--superseded/--no-superseded", default=True, show_default=True, help="Superseded or ended memories.")
    @fields(PurgeMemories, "dry_run")
    @as_json
    @pass_client
    def purge(c: Client, bank_id, invalidated, superseded, as_json, **values):
        """Forget, for good, memories that are no longer true (kept for audit until now)."""
        req = {"invalidated": invalidated, "superseded": superseded, **body(values)}
        _show(c.call("POST", f"/v1/banks/{bank_id}/memories/purge", json=req), as_json)

    @forget.command("document")
    @click.argument("bank_id")
    @click.argument("document_id")
    @click.option("--dry-run", is_flag=True, help="Only count what would be forgotten.")
    @as_json
    @pass_client
    def forget_document(c: Client, bank_id, document_id, dry_run, as_json):
        """Forget everything retained under DOCUMENT_ID (a conversation, a document)."""
        req = {"document_id": document_id, "dry_run": dry_run}
        _show(c.call("POST", f"/v1/banks/{bank_id}/memories/forget-document", json=req), as_json)

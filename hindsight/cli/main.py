"""`hindsight` command line: `serve` runs the server; the other commands talk to a running server
over REST (URL from --url / HINDSIGHT_URL, key from --key / HINDSIGHT_KEY)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys

import click

from hindsight.cli.client import DEFAULT_URL, Client, make_group, pass_client
from hindsight.cli.client import out as _out
from hindsight.cli.options import body, fields
from hindsight.engine.banks.schemas import BankCreate, BankUpdate
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.search.schemas import RecallRequest

# The modules of the client commands that live apart from this one, each with a `register(group)`.
COMMAND_MODULES = (
    "llm_commands",
    "document_commands",
    "memory_commands",
    "migrate",
    "directive_commands",
    "forget_commands",
    "audit_commands",
)


class Commands(click.Group):
    """The top-level group. COMMAND_MODULES register their commands when a command not defined
    here, or the list of them, is first asked for: a server process (`serve`) never imports them."""

    loaded = False

    def load(self) -> None:
        if not self.loaded:
            self.loaded = True
            for name in COMMAND_MODULES:
                importlib.import_module(f"hindsight.cli.{name}").register(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and not self.loaded:
            self.load()
            found = super().get_command(ctx, cmd_name)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load()
        return super().list_commands(ctx)


@click.group(cls=Commands)
@click.version_option(package_name="hindsight-memory")
def cli() -> None:
    """Hindsight: memory banks for AI agents."""


@cli.command()
@click.option("--host", default=None, help="Bind address [HINDSIGHT_API_HOST, default 127.0.0.1].")
@click.option("--port", default=None, type=int, help="Port [HINDSIGHT_API_PORT, default 8888].")
def serve(host: str | None, port: int | None) -> None:
    """Run the server (embedded PostgreSQL unless HINDSIGHT_API_DATABASE_URL is set)."""
    from hindsight import malloc
    from hindsight.config import ConfigError, load_settings
    from hindsight.engine.access.tenant import extension_class

    malloc.configure()

    try:
        settings = load_settings()
        extension_class(settings.tenant_extension).check_settings(settings)
    except ConfigError as exc:
        click.echo(f"hindsight: configuration error: {exc}", err=True)
        sys.exit(2)
    settings = settings.model_copy(update={"host": host or settings.host, "port": port or settings.port})
    if settings.workers > 1:
        from hindsight.server.workers import Supervisor

        sys.exit(Supervisor(settings).run())
    from hindsight.server.serve import serve_settings

    sys.exit(serve_settings(settings))


@cli.command("mcp")
@click.option(
    "--bank",
    envvar="HINDSIGHT_MCP_BANK_ID",
    default="default",
    show_default=True,
    help="The bank this process serves [HINDSIGHT_MCP_BANK_ID].",
)
@click.option("--user-id", default=None, help="Caller user id for document access (what x-user-id is over HTTP).")
@click.option(
    "--session-tag", "session_tags", multiple=True, help="Caller session tag for document access (repeatable)."
)
def mcp_stdio(bank: str, user_id: str | None, session_tags: tuple[str, ...]) -> None:
    """Serve one bank's MCP tools over stdio (for agents that spawn a process)."""
    from hindsight.config import ConfigError, load_settings
    from hindsight.engine.banks.registry import check_bank_id
    from hindsight.engine.errors import InvalidArgument

    try:
        settings = load_settings()
        check_bank_id(bank, "--bank")
    except (ConfigError, InvalidArgument) as exc:
        click.echo(f"hindsight: {getattr(exc, 'message', exc)}", err=True)
        sys.exit(2)
    from hindsight import logs
    from hindsight.mcp.stdio import serve_stdio

    # stderr only (stdout carries the protocol), and warnings only, as before
    logs.configure(settings.log_format, "warning")

    try:
        asyncio.run(serve_stdio(settings, bank, user_id, list(session_tags)))
    except KeyboardInterrupt:
        pass


# ---- client side ------------------------------------------------------------------------
def client_group(name: str, help: str):
    return make_group(cli, name, help)


banks = client_group("banks", "Create, list, inspect, update and delete banks.")
keys = client_group("keys", "Manage API keys (admin key required).")


@banks.command("list")
@pass_client
def banks_list(c: Client):
    for b in c.call("GET", "/v1/banks")["banks"]:
        click.echo(f"{b['bank_id']}\t{b.get('memory_count', 0)} memories\t{b.get('name') or ''}")


@banks.command("create")
@click.argument("bank_id")
@fields(BankCreate, "name", "mission", document_chunk_size="--chunk-size")
@pass_client
def banks_create(c: Client, bank_id, **values):
    _out(c.call("POST", "/v1/banks", json={"bank_id": bank_id, **body(values)}))


@banks.command("get")
@click.argument("bank_id")
@pass_client
def banks_get(c: Client, bank_id):
    _out(c.call("GET", f"/v1/banks/{bank_id}"))


@banks.command("update")
@click.argument("bank_id")
@fields(BankUpdate, "name", "mission", "retention_days", document_chunk_size="--chunk-size")
@click.option(
    "--retention-tag",
    "retention_tags",
    multiple=True,
    metavar="TAG=DAYS",
    help="Days memories with TAG are kept (repeatable; replaces the tags set before). See docs/privacy.md.",
)
@click.option("--no-retention-tags", is_flag=True, help="Clear the retention set by tag.")
@pass_client
def banks_update(c: Client, bank_id, retention_tags, no_retention_tags, **values):
    """Update a bank's name, mission, chunk size or retention (0 days: keep forever)."""
    req = body(values)
    if retention_tags or no_retention_tags:
        by_tag = {}
        for given in retention_tags:
            tag, _, days = given.rpartition("=")
            if not tag or not days.isdigit():
                raise click.UsageError(f"--retention-tag {given!r}: give TAG=DAYS, e.g. chat=30")
            by_tag[tag] = int(days)
        req["retention_by_tag"] = by_tag
    _out(c.call("PATCH", f"/v1/banks/{bank_id}", json=req))


@banks.command("delete")
@click.argument("bank_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_client
def banks_delete(c: Client, bank_id, yes):
    if not yes:
        click.confirm(f"Delete bank {bank_id} and all its memories?", abort=True)
    _out(c.call("DELETE", f"/v1/banks/{bank_id}"))


@banks.command("export")
@click.argument("bank_id")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="File to write [default: BANK_ID.hindsight.jsonl.gz]."
)
@pass_client
def banks_export(c: Client, bank_id, output):
    """Export a bank (memories, documents, chunks, entities, mental models, embeddings) to one file."""
    path = output or f"{bank_id}.hindsight.jsonl.gz"
    try:
        with open(path, "wb") as f:
            n = c.download(f"/v1/banks/{bank_id}/export", f)
    except click.ClickException:
        os.unlink(path)  # no half-written archive left behind
        raise
    click.echo(f"exported {bank_id} to {path} ({n:,} bytes)")


@banks.command("import")
@click.argument("bank_id")
@click.argument("file", type=click.File("rb"))
@click.option(
    "--on-conflict",
    type=click.Choice(["rename", "skip", "replace"]),
    default="rename",
    show_default=True,
    help="What to do with imported documents / mental models whose name is taken.",
)
@pass_client
def banks_import(c: Client, bank_id, file, on_conflict):
    """Import an exported bank file into BANK_ID (created if needed)."""
    _out(
        c.call(
            "POST",
            f"/v1/banks/{bank_id}/import",
            params={"on_conflict": on_conflict},
            content=file,
            headers={"Content-Type": "application/gzip"},
            timeout=None,
        )
    )


@keys.command("create")
@click.argument("name")
@click.option("--admin", is_flag=True, help="An admin key (all banks, bank management).")
@click.option("--bank", "banks_", multiple=True, help="Bank the key may access (repeatable).")
@click.option("--read-only", is_flag=True, help="Scoped key may only read.")
@pass_client
def keys_create(c: Client, name, admin, banks_, read_only):
    body = {
        "name": name,
        "role": "admin" if admin else "bank",
        "banks": list(banks_),
        "access": "read" if read_only else "read_write",
    }
    _out(c.call("POST", "/v1/keys", json=body))


@keys.command("list")
@pass_client
def keys_list(c: Client):
    _out(c.call("GET", "/v1/keys")["keys"])


@keys.command("revoke")
@click.argument("key_id")
@pass_client
def keys_revoke(c: Client, key_id):
    _out(c.call("DELETE", f"/v1/keys/{key_id}"))


@cli.command()
@click.argument("bank_id")
@click.argument("content", required=False)
@click.option("--file", "file_", type=click.File("r"), help="Read content from a file ('-' for stdin).")
@click.option("--jsonl", type=click.File("r"), help="Batch: one JSON item per line.")
@fields(RetainItem, "context", "timestamp", "document_id", tags="--tag", supersedes="--supersedes")
@click.option("--wait", is_flag=True, help="With an LLM: wait for fact extraction.")
@click.option("--url", envvar="HINDSIGHT_URL", default=DEFAULT_URL)
@click.option("--key", envvar="HINDSIGHT_KEY", default=None)
def retain(bank_id, content, file_, jsonl, wait, url, key, **values):
    """Store CONTENT (or --file, or a --jsonl batch) in BANK_ID."""
    c = Client(url, key)
    if jsonl:
        items = [json.loads(line) for line in jsonl if line.strip()]
        _out(c.call("POST", f"/v1/banks/{bank_id}/memories", json={"items": items}, params={"wait": wait}))
        return
    if file_:
        content = file_.read()
    if not content:
        raise click.UsageError("give CONTENT, --file or --jsonl")
    _out(
        c.call(
            "POST", f"/v1/banks/{bank_id}/memories", json={"content": content, **body(values)}, params={"wait": wait}
        )
    )


@cli.command()
@click.argument("bank_id")
@click.argument("query")
@fields(RecallRequest, "max_tokens", "as_of", "include_superseded", tags="--tag")
@click.option("--json", "as_json", is_flag=True, help="Print the full JSON result.")
@click.option("--url", envvar="HINDSIGHT_URL", default=DEFAULT_URL)
@click.option("--key", envvar="HINDSIGHT_KEY", default=None)
def recall(bank_id, query, as_json, url, key, **values):
    """Recall memories of BANK_ID for QUERY."""
    c = Client(url, key)
    res = c.call("POST", f"/v1/banks/{bank_id}/recall", json={"query": query, **body(values)})
    if as_json:
        _out(res)
        return
    for m in res["results"]:
        when = (m.get("occurred_start") or m.get("mentioned_at") or "")[:10]
        ended = f"  [until {m['valid_to'][:10]}, replaced by {m['superseded_by']}]" if m.get("valid_to") else ""
        click.echo(f"{m['score']:.4f}  {when}  {m['text']}{ended}")
    if not res["results"]:
        click.echo("no memories match", err=True)


@cli.command("config")
def config_table():
    """Print every setting with its default (Markdown)."""
    from hindsight.docs import settings_table

    click.echo(settings_table(), nl=False)


@cli.command("docs")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--check", is_flag=True, help="Exit 1 if a file differs from the code, instead of writing it.")
def docs(paths: tuple[str, ...], check: bool) -> None:
    """Regenerate the tables of settings and MCP tools between the generated markers of PATHS
    (default: README.md and docs/*.md under the current folder)."""
    from pathlib import Path

    from hindsight.docs import documentation, update

    files = [Path(p) for p in paths] or [f for f in documentation(Path.cwd()) if f.exists()]
    stale = []
    for f in files:
        text = f.read_text()
        new = update(text)
        if new == text:
            continue
        if check:
            stale.append(str(f))
        else:
            f.write_text(new)
            click.echo(f"{f}: tables updated")
    if stale:
        raise click.ClickException(f"out of date with the code: {', '.join(stale)}: run `hindsight docs`")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

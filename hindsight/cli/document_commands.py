"""CLI for the knowledge base: import files and URLs (with a progress bar), list, get, delete and
search documents (REST calls to a running server)."""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

import click

from hindsight.cli.client import Client, make_group, out, pass_client

TERMINAL = {"succeeded", "failed", "cancelled"}


def _follow(c: Client, bank_id: str, op_id: str, total: int) -> dict:
    """Poll the import operation and show its progress ({done, total}) on stderr: a bar on a
    terminal, one "Importing: n/total" line per step otherwise (logs, CI)."""
    tty = sys.stderr.isatty()
    bar = click.progressbar(length=total, label="Importing", file=sys.stderr, show_pos=True) if tty else None
    shown = -1
    try:
        while True:
            op = c.call("GET", f"/v1/banks/{bank_id}/operations/{op_id}")
            done = total if op["status"] in TERMINAL else (op.get("progress") or {}).get("done", 0)
            if done > shown:
                if bar is not None:
                    bar.update(done - max(shown, 0))
                else:
                    click.echo(f"Importing: {done}/{total}", err=True)
                shown = done
            if op["status"] in TERMINAL:
                return op
            time.sleep(0.3)
    finally:
        if bar is not None:
            bar.render_finish()


def register(cli: click.Group) -> None:
    docs = make_group(cli, "documents", "Import, list, inspect, search and delete knowledge-base documents.")

    @docs.command("import")
    @click.argument("bank_id")
    @click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--url", "urls", multiple=True, help="A public URL to fetch (repeatable).")
    @click.option("--tag", "tags", multiple=True, help="Access tag (repeatable); none = public.")
    @click.option("--user", "users", multiple=True, help="User id that may always see them (repeatable).")
    @click.option("--chunk-size", type=int, default=None, help="Characters per chunk (default: the server's).")
    @click.option("--no-wait", is_flag=True, help="Return the operation id without waiting.")
    @pass_client
    def import_(c: Client, bank_id, files, urls, tags, users, chunk_size, no_wait):
        """Import FILES (TXT, MD, HTML, PDF, DOCX) and --url pages into BANK_ID."""
        if not files and not urls:
            raise click.UsageError("give at least one file or --url")
        body = {
            "files": [{"name": f.name, "content_base64": base64.b64encode(f.read_bytes()).decode()} for f in files],
            "urls": list(urls),
            "tags": list(tags),
            "allowed_users": list(users),
        }
        if chunk_size:
            body["chunk_size"] = chunk_size
        acc = c.call("POST", f"/v1/banks/{bank_id}/documents", json=body)
        if no_wait:
            out(acc)
            return
        op = _follow(c, bank_id, acc["operation_id"], len(files) + len(urls))
        if op["status"] != "succeeded":
            raise click.ClickException(f"import {op['status']}: {op.get('error')}")
        failed = 0
        for f in op["result"]["files"]:
            detail = f.get("error") or f"{f['chunks']} chunks" + (f", {f['pages']} pages" if f.get("pages") else "")
            click.echo(f"{f['status']:<10} {f['name']}  {detail}")
            failed += f["status"] == "failed"
        if failed:
            sys.exit(1)

    @docs.command("list")
    @click.argument("bank_id")
    @pass_client
    def list_(c: Client, bank_id):
        for d in c.call("GET", f"/v1/banks/{bank_id}/documents")["documents"]:
            tags = ",".join(d["tags"]) or "public"
            click.echo(
                f"{d['document_id']}  {d['source_type']:<5} {d['chunk_count']:>4} chunks  {tags:<20} {d['source_name']}"
            )

    @docs.command("get")
    @click.argument("bank_id")
    @click.argument("document_id")
    @pass_client
    def get(c: Client, bank_id, document_id):
        out(c.call("GET", f"/v1/banks/{bank_id}/documents/{document_id}"))

    @docs.command("delete")
    @click.argument("bank_id")
    @click.argument("document_id")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @pass_client
    def delete(c: Client, bank_id, document_id, yes):
        if not yes:
            click.confirm(f"Delete document {document_id} and its chunks?", abort=True)
        out(c.call("DELETE", f"/v1/banks/{bank_id}/documents/{document_id}"))

    @docs.command("search")
    @click.argument("bank_id")
    @click.argument("query")
    @click.option("--mode", type=click.Choice(["hybrid", "vector", "keyword"]), default="hybrid", show_default=True)
    @click.option("--top-k", type=int, default=None, help="How many results (the server's default when left out).")
    @click.option("--strictness", type=int, default=None, help="0-5 (default 1).")
    @click.option("--min-score", type=float, default=None, help="0-1, instead of --strictness.")
    @click.option("--filter", "filter_", default=None, help='e.g. source_type = "pdf" and tags contains "manual"')
    @click.option("--session-tag", "session_tags", multiple=True, help="Search as a caller with this tag.")
    @click.option("--user-id", default=None, help="Search as this user.")
    @click.option("--json", "as_json", is_flag=True)
    @pass_client
    def search(c: Client, bank_id, query, mode, top_k, strictness, min_score, filter_, session_tags, user_id, as_json):
        import json

        body = {
            "query": query,
            "mode": mode,
            "top_k": top_k,
            "strictness": strictness,
            "min_score": min_score,
            "filter": filter_,
        }
        headers = {}
        if session_tags:
            headers["x-session-tags"] = json.dumps(list(session_tags))
        if user_id:
            headers["x-user-id"] = user_id
        res = c.call(
            "POST",
            f"/v1/banks/{bank_id}/documents/query",
            json={k: v for k, v in body.items() if v is not None},
            headers=headers,
        )
        if as_json:
            out(res)
            return
        for r in res["results"]:
            pages = (
                f" p.{'-'.join(map(str, r['page_numbers'][:: max(1, len(r['page_numbers']) - 1)]))}"
                if r["page_numbers"]
                else ""
            )
            text = " ".join(r["content"].split())
            click.echo(f"{r['score']:.3f}  {r['file_path']}{pages}  {text[:160]}")

"""CLI for reflect, mental models, operations and LLM usage (REST calls to a running server)."""

from __future__ import annotations

import time

import click

from hindsight.cli.client import DEFAULT_URL, Client, make_group, out, pass_client

TERMINAL = {"succeeded", "failed", "cancelled"}


def register(cli: click.Group) -> None:
    @cli.command()
    @click.argument("bank_id")
    @click.argument("query")
    @click.option("--context", default=None, help="Why the reflection is needed.")
    @click.option("--budget", type=click.Choice(["low", "mid", "high"]), default="low", show_default=True)
    @click.option(
        "--on-llm-failure",
        type=click.Choice(["error", "extractive"]),
        default=None,
        help="When the LLM fails: an error naming the cause, or the most relevant memories verbatim "
        "(default: the server's setting).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the full JSON result.")
    @click.option("--url", envvar="HINDSIGHT_URL", default=DEFAULT_URL)
    @click.option("--key", envvar="HINDSIGHT_KEY", default=None)
    def reflect(bank_id, query, context, budget, on_llm_failure, as_json, url, key):
        """Answer QUERY from the memories of BANK_ID."""
        body = {"query": query, "budget": budget, **({"context": context} if context else {})}
        if on_llm_failure:
            body["on_llm_failure"] = on_llm_failure
        res = Client(url, key).call("POST", f"/v1/banks/{bank_id}/reflect", json=body)
        if as_json:
            out(res)
            return
        click.echo(res["answer"])
        if res.get("note"):
            click.echo(f"\n({res['note']})", err=True)
        click.echo(
            f"\nbased on {len(res['based_on']['memories'])} memories, "
            f"{len(res['based_on']['mental_models'])} mental models",
            err=True,
        )

    models = make_group(cli, "mental-models", "Create, list, inspect, update, refresh and delete mental models.")

    @models.command("create")
    @click.argument("bank_id")
    @click.argument("name")
    @click.argument("source_query")
    @click.option("--id", "model_id", default=None, help="Custom id (lowercase letters, digits, hyphens).")
    @click.option("--tag", "tags", multiple=True)
    @click.option("--max-tokens", type=int, default=None)
    @click.option("--wait", is_flag=True, help="Wait for the first content.")
    @pass_client
    def create(c: Client, bank_id, name, source_query, model_id, tags, max_tokens, wait):
        body = {
            "name": name,
            "source_query": source_query,
            "mental_model_id": model_id,
            "tags": list(tags) or None,
            "max_tokens": max_tokens,
        }
        res = c.call(
            "POST", f"/v1/banks/{bank_id}/mental-models", json={k: v for k, v in body.items() if v is not None}
        )
        if wait:
            _wait(c, bank_id, res["operation_id"])
            res = c.call("GET", f"/v1/banks/{bank_id}/mental-models/{res['mental_model_id']}")
        out(res)

    @models.command("list")
    @click.argument("bank_id")
    @click.option("--tag", "tags", multiple=True)
    @pass_client
    def list_(c: Client, bank_id, tags):
        out(c.call("GET", f"/v1/banks/{bank_id}/mental-models", params=[("tags", t) for t in tags])["mental_models"])

    @models.command("get")
    @click.argument("bank_id")
    @click.argument("mental_model_id")
    @click.option("--history", is_flag=True, help="Show previous contents instead.")
    @pass_client
    def get(c: Client, bank_id, mental_model_id, history):
        suffix = "/history" if history else ""
        out(c.call("GET", f"/v1/banks/{bank_id}/mental-models/{mental_model_id}{suffix}"))

    @models.command("update")
    @click.argument("bank_id")
    @click.argument("mental_model_id")
    @click.option("--name")
    @click.option("--source-query")
    @click.option("--tag", "tags", multiple=True)
    @click.option("--max-tokens", type=int)
    @pass_client
    def update(c: Client, bank_id, mental_model_id, name, source_query, tags, max_tokens):
        body = {"name": name, "source_query": source_query, "tags": list(tags) or None, "max_tokens": max_tokens}
        out(
            c.call(
                "PATCH",
                f"/v1/banks/{bank_id}/mental-models/{mental_model_id}",
                json={k: v for k, v in body.items() if v is not None},
            )
        )

    @models.command("refresh")
    @click.argument("bank_id")
    @click.argument("mental_model_id")
    @click.option("--wait", is_flag=True, help="Wait until the refresh finishes.")
    @pass_client
    def refresh(c: Client, bank_id, mental_model_id, wait):
        res = c.call("POST", f"/v1/banks/{bank_id}/mental-models/{mental_model_id}/refresh")
        out(_wait(c, bank_id, res["operation_id"]) if wait else res)

    @models.command("delete")
    @click.argument("bank_id")
    @click.argument("mental_model_id")
    @pass_client
    def delete(c: Client, bank_id, mental_model_id):
        out(c.call("DELETE", f"/v1/banks/{bank_id}/mental-models/{mental_model_id}"))

    operations = make_group(cli, "operations", "Inspect and cancel asynchronous operations.")

    @operations.command("list")
    @click.argument("bank_id")
    @click.option("--status", type=click.Choice(["queued", "running", "succeeded", "failed", "cancelled"]))
    @click.option("--type", "type_")
    @click.option("--limit", type=int, default=None, help="At most this many (the server's default when left out).")
    @pass_client
    def ops_list(c: Client, bank_id, status, type_, limit):
        params = {k: v for k, v in {"status": status, "type": type_, "limit": limit}.items() if v is not None}
        for op in c.call("GET", f"/v1/banks/{bank_id}/operations", params=params)["operations"]:
            click.echo(
                f"{op['operation_id']}  {op['type']:<22} {op['status']:<10} attempts={op['attempts']}"
                f"  {op['created_at']}  {op['error'] or ''}"
            )

    @operations.command("get")
    @click.argument("bank_id")
    @click.argument("operation_id")
    @click.option("--wait", is_flag=True, help="Wait until it finishes.")
    @pass_client
    def ops_get(c: Client, bank_id, operation_id, wait):
        out(
            _wait(c, bank_id, operation_id) if wait else c.call("GET", f"/v1/banks/{bank_id}/operations/{operation_id}")
        )

    @operations.command("cancel")
    @click.argument("bank_id")
    @click.argument("operation_id")
    @pass_client
    def ops_cancel(c: Client, bank_id, operation_id):
        out(c.call("POST", f"/v1/banks/{bank_id}/operations/{operation_id}/cancel"))

    @operations.command("usage")
    @click.argument("bank_id")
    @pass_client
    def usage(c: Client, bank_id):
        """LLM calls, tokens and cost of BANK_ID."""
        out(c.call("GET", f"/v1/banks/{bank_id}/usage"))


def _wait(c: Client, bank_id: str, operation_id: str, timeout: float = 600) -> dict:
    deadline = time.time() + timeout
    while True:
        op = c.call("GET", f"/v1/banks/{bank_id}/operations/{operation_id}")
        if op["status"] in TERMINAL or time.time() > deadline:
            return op
        time.sleep(0.3)

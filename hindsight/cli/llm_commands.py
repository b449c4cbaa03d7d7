"""CLI for reflect, mental models, operations and LLM usage (REST calls to a running server)."""

from __future__ import annotations

import time

import click

from hindsight.cli.client import DEFAULT_URL, Client, make_group, out, pass_client
from hindsight.cli.options import body, fields
from hindsight.engine.reflection.mental_models import MentalModelCreate, MentalModelUpdate
from hindsight.engine.reflection.reflect import ReflectRequest

TERMINAL = {"succeeded", "failed", "cancelled"}


def register(cli: click.Group) -> None:
    @cli.command()
    @click.argument("bank_id")
    @click.argument("query")
    @fields(ReflectRequest, "context", "budget", "max_tokens", "on_llm_failure", tags="--tag")
    @click.option("--json", "as_json", is_flag=True, help="Print the full JSON result.")
    @click.option("--url", envvar="HINDSIGHT_URL", default=DEFAULT_URL)
    @click.option("--key", envvar="HINDSIGHT_KEY", default=None)
    def reflect(bank_id, query, as_json, url, key, **values):
        """Answer QUERY from the memories of BANK_ID."""
        body_ = {"query": query, **body(values)}
        res = Client(url, key).call("POST", f"/v1/banks/{bank_id}/reflect", json=body_)
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
    @fields(MentalModelCreate, "max_tokens", mental_model_id="--id", tags="--tag")
    @click.option("--wait", is_flag=True, help="Wait for the first content.")
    @pass_client
    def create(c: Client, bank_id, name, source_query, wait, **values):
        res = c.call(
            "POST",
            f"/v1/banks/{bank_id}/mental-models",
            json={"name": name, "source_query": source_query, **body(values)},
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
    @fields(MentalModelUpdate, "name", "source_query", "max_tokens", tags="--tag")
    @pass_client
    def update(c: Client, bank_id, mental_model_id, **values):
        out(c.call("PATCH", f"/v1/banks/{bank_id}/mental-models/{mental_model_id}", json=body(values)))

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

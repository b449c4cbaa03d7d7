"""CLI for directives: a bank owner's standing instructions to reflect and mental models."""

from __future__ import annotations

import click

from hindsight.cli.client import Client, make_group, out, pass_client
from hindsight.cli.options import body, fields
from hindsight.engine.directives.schemas import DirectiveCreate, DirectiveUpdate


def register(cli: click.Group) -> None:
    group = make_group(cli, "directives", "Standing instructions reflect and mental models follow.")

    @group.command("create")
    @click.argument("bank_id")
    @click.argument("name")
    @click.argument("content")
    @fields(DirectiveCreate, "priority", tags="--tag")
    @click.option("--inactive", is_flag=True, help="Keep it, but do not apply it yet.")
    @pass_client
    def create(c: Client, bank_id, name, content, inactive, **values):
        """Add directive NAME saying CONTENT to BANK_ID."""
        payload = {"name": name, "content": content, **body(values)}
        if inactive:
            payload["is_active"] = False
        out(c.call("POST", f"/v1/banks/{bank_id}/directives", json=payload))

    @group.command("list")
    @click.argument("bank_id")
    @click.option("--all", "every", is_flag=True, help="Inactive directives too.")
    @pass_client
    def list_(c: Client, bank_id, every):
        """BANK_ID's directives, highest priority first."""
        found = c.call("GET", f"/v1/banks/{bank_id}/directives", params={"active_only": not every, "limit": 1000})
        for d in found["directives"]:
            state = "" if d["is_active"] else " (inactive)"
            tags = f" [{', '.join(d['tags'])}]" if d["tags"] else ""
            click.echo(f"{d['directive_id']}\t{d['priority']}\t{d['name']}{tags}{state}: {d['content']}")

    @group.command("get")
    @click.argument("bank_id")
    @click.argument("directive_id")
    @pass_client
    def get(c: Client, bank_id, directive_id):
        out(c.call("GET", f"/v1/banks/{bank_id}/directives/{directive_id}"))

    @group.command("update")
    @click.argument("bank_id")
    @click.argument("directive_id")
    @fields(DirectiveUpdate, "name", "content", "priority", tags="--tag")
    @click.option("--active/--inactive", "is_active", default=None, help="Apply it, or keep it without applying it.")
    @pass_client
    def update(c: Client, bank_id, directive_id, **values):
        """Change what is given; the rest stays."""
        out(c.call("PATCH", f"/v1/banks/{bank_id}/directives/{directive_id}", json=body(values)))

    @group.command("delete")
    @click.argument("bank_id")
    @click.argument("directive_id")
    @pass_client
    def delete(c: Client, bank_id, directive_id):
        out(c.call("DELETE", f"/v1/banks/{bank_id}/directives/{directive_id}"))

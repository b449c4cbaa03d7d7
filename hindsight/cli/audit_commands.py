"""CLI for the audit log: read it (one bank's, or every bank's with an admin key), count it, and
export it as JSON lines (REST calls to a running server)."""

from __future__ import annotations

from urllib.parse import urlencode

import click

from hindsight.cli.client import Client, make_group, out, pass_client
from hindsight.cli.options import body, fields
from hindsight.engine.audit.schemas import AuditQuery, AuditStatsQuery


def register(cli: click.Group) -> None:
    audit = make_group(cli, "audit", "Read the audit log: who read or changed a bank, when, and how it ended.")
    bank = click.option("--bank", "bank_id", default=None, help="One bank's records (default: every bank's; admin).")

    def base(bank_id: str | None) -> str:
        return f"/v1/banks/{bank_id}/audit-logs" if bank_id else "/v1/audit-logs"

    @audit.command("list")
    @bank
    @fields(AuditQuery, "action", "transport", "principal", "outcome", "start_date", "end_date", "limit", "offset")
    @click.option("--json", "as_json", is_flag=True, help="Print the full JSON answer.")
    @pass_client
    def audit_list(c: Client, bank_id, as_json, **values):
        """Records, newest first."""
        r = c.call("GET", base(bank_id), params=body(values))
        if as_json:
            out(r)
            return
        for e in r["items"]:
            click.echo(
                f"{e['started_at'][:23]}  {e['bank_id'] or '-':<20} {e['transport']:<6} {e['action']:<28} "
                f"{e['status']} {e['outcome']:<16} {e['principal'] or '-'}  {e['request_id']}"
            )
        click.echo(f"{len(r['items'])} of {r['total']} records", err=True)

    @audit.command("stats")
    @click.argument("bank_id")
    @fields(AuditStatsQuery, "action", "period")
    @pass_client
    def audit_stats(c: Client, bank_id, **values):
        """A bank's records counted by operation, by hour (1d) or day (7d, 30d)."""
        out(c.call("GET", f"/v1/banks/{bank_id}/audit-logs/stats", params=body(values)))

    @audit.command("export")
    @bank
    @fields(AuditQuery, "start_date", "end_date")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="File to write (JSON lines).")
    @pass_client
    def audit_export(c: Client, bank_id, output, **values):
        """Records as JSON lines, oldest first, into a file."""
        query = urlencode(body(values))
        path = base(bank_id) + "/export" + (f"?{query}" if query else "")
        with open(output, "wb") as f:
            n = c.download(path, f)
        click.echo(f"exported the audit log to {output} ({n:,} bytes)")

"""The REST client behind every CLI command except `serve`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "http://127.0.0.1:8888"


class Client:
    def __init__(self, url: str, key: str | None):
        # Imported here, by the command that talks to a server: `hindsight serve` imports this
        # module (cli/main.py) and never holds an HTTP client it does not use (~4 MB).
        import httpx

        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=120)
        self.errors = httpx.HTTPError

    def call(self, method: str, path: str, **kw):
        try:
            r = self.http.request(method, path, **kw)
        except self.errors as exc:
            raise click.ClickException(f"cannot reach the server at {self.http.base_url}: {exc}") from None
        return self.check(r)

    def download(self, path: str, dest) -> int:
        """Stream a response body into the binary file `dest`; returns the bytes written."""
        n = 0
        try:
            with self.http.stream("GET", path, timeout=None) as r:
                if r.status_code >= 400:
                    r.read()
                    self.check(r)
                for chunk in r.iter_bytes():
                    dest.write(chunk)
                    n += len(chunk)
        except self.errors as exc:
            raise click.ClickException(f"cannot reach the server at {self.http.base_url}: {exc}") from None
        return n

    def check(self, r: httpx.Response):
        try:
            body = r.json()
        except ValueError:
            body = {"message": r.text}
        if r.status_code >= 400:
            raise click.ClickException(f"{r.status_code} {body.get('error', '')}: {body.get('message', body)}")
        return body


pass_client = click.make_pass_decorator(Client)


def out(data) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def make_group(parent: click.Group, name: str, help: str) -> click.Group:
    @parent.group(name=name, help=help)
    @click.option(
        "--url", envvar="HINDSIGHT_URL", default=DEFAULT_URL, show_default=True, help="Server URL [HINDSIGHT_URL]."
    )
    @click.option("--key", envvar="HINDSIGHT_KEY", default=None, help="API key [HINDSIGHT_KEY].")
    @click.pass_context
    def group(ctx, url, key):
        ctx.obj = Client(url, key)

    return group

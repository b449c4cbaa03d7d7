"""Path and query text held to the rule request bodies are held to (engine/rules/text.py): a NUL
or an unpaired surrogate in `?q=` or in a path id is a 422 naming the parameter, before any route
sees it, not a database error."""

from __future__ import annotations

from urllib.parse import parse_qsl

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.rules.text import text_problem


def url_refusal(scope) -> InvalidArgument | None:
    """A 422 naming the path or query parameter whose text breaks the rule of engine/rules/text.py."""
    if p := text_problem(scope.get("path", "")):
        return InvalidArgument(f"path: {p}", "path")
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True):
        for what, text in (("name", name), ("value", value)):
            if p := text_problem(text):
                where = name if what == "value" and not text_problem(name) else "query"
                return InvalidArgument(f"{where}: {p}", where)
    return None


class UrlTextGuard:
    """Middleware: a URL that breaks the text rule is refused (raised to error_answers.py)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (refused := url_refusal(scope)) is not None:
            raise refused
        await self.app(scope, receive, send)

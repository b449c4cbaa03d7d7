"""The parameters of an OAuth request, read strictly before any handler sees them.

RFC 6749 sends the token and revocation requests, and a POSTed authorization request, as
`application/x-www-form-urlencoded` in UTF-8 (appendix B), each parameter at most once
(section 3.1, 3.2); the authorization request's GET sends the same in the query. Starlette's own
form parsing raises on a multipart body without a boundary, on more than 1,000 fields or a part
past 1 MB, and the SDK's handlers catch none of that (a 500 and a traceback); it also takes the
last of repeated parameters and turns bytes that are not UTF-8 into U+FFFD. So every OAuth form
and query is read here first, and refused with what is wrong unless it is exactly that: the
media type (charset UTF-8 if one is named), at most MAX_FIELDS parameters, each named once,
percent-decoding to UTF-8 text that holds to the text rule (engine/rules/text.py) and has no
control character (appendix A: every OAuth parameter is printable text), no name longer than
MAX_NAME_CHARS and no value longer than MAX_VALUE_CHARS. A form that passes is handed on as a body re-encoded from what was read, which
Starlette then parses without surprise.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote, unquote_to_bytes, urlencode

from hindsight.engine.rules.text import text_problem
from hindsight.web.scope import header

FORM = "application/x-www-form-urlencoded"
MAX_FIELDS = 32
MAX_VALUE_CHARS = 4096
MAX_NAME_CHARS = 100  # OAuth's longest parameter name has 21
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class FormProblem(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def check_media_type(scope) -> None:
    value = header(scope, b"content-type")
    if value is None:
        raise FormProblem(f"body: send it as {FORM} (RFC 6749); no Content-Type was given")
    kind, *params = (p.strip() for p in value.split(";"))
    if kind.lower() != FORM:
        raise FormProblem(f"body: send it as {FORM} (RFC 6749), not {kind[:100]!r}")
    for p in params:
        name, _, val = p.partition("=")
        if name.strip().lower() == "charset" and val.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise FormProblem(f"body: charset {val.strip()[:40]!r}; OAuth forms are UTF-8")


def parse(data: bytes, what: str = "body") -> dict[str, str]:
    """The parameters of a urlencoded `data` (a body, or a query string) by name; FormProblem
    for anything but the exact format."""
    fields: dict[str, str] = {}
    for part in data.split(b"&"):
        if not part:
            continue
        if len(fields) == MAX_FIELDS:
            raise FormProblem(f"{what}: more than {MAX_FIELDS} parameters; an OAuth request has a few")
        raw_name, _, raw_value = part.partition(b"=")
        name = _decode(raw_name, what, None)
        if not name:
            raise FormProblem(f"{what}: a parameter without a name")
        if len(name) > MAX_NAME_CHARS:
            raise FormProblem(f"{what}: a parameter name longer than {MAX_NAME_CHARS} characters")
        value = _decode(raw_value, what, name)
        if name in fields:
            raise FormProblem(f"{name}: given more than once (RFC 6749, section 3.1)")
        if len(value) > MAX_VALUE_CHARS:
            raise FormProblem(f"{name}: longer than {MAX_VALUE_CHARS} characters")
        fields[name] = value
    return fields


def _decode(raw: bytes, what: str, name: str | None) -> str:
    where = name if name is not None else f"{what}: a parameter name"
    try:
        text = unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        raise FormProblem(f"{where}: not UTF-8 once percent-decoded") from None
    if p := text_problem(text):
        raise FormProblem(f"{where}: {p}")
    if m := _CONTROL.search(text):
        raise FormProblem(
            f"{where}: contains the control character U+{ord(m.group()):04X}; OAuth parameters are printable"
        )
    return text


def encode(fields: dict[str, str]) -> bytes:
    return urlencode(list(fields.items())).encode()


def basic_client_id(scope) -> str | None:
    """The client id of an `Authorization: Basic` header (RFC 6749, section 2.3.1), if it has a
    readable one. A client authenticating so need not repeat it in the body, but the SDK's
    handlers read it there only: the endpoints add it (oauth/endpoints.py)."""
    value = header(scope, b"authorization") or ""
    if not value.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(value[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    client_id, colon, _ = decoded.partition(":")
    client_id = unquote(client_id)
    return client_id if colon and client_id and not text_problem(client_id) else None


def replaced_body(scope, receive, body: bytes):
    """`scope` and `receive` that hand on `body` as a urlencoded form (the request's own body
    having been read), with its length; after it, the connection's own messages."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k not in (b"content-type", b"content-length")]
    headers += [(b"content-type", FORM.encode()), (b"content-length", str(len(body)).encode())]
    sent = False

    async def replayed():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return {**scope, "headers": headers}, replayed

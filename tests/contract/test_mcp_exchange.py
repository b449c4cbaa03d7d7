"""A handshake-era request answered in one exchange (mcp/single_exchange.py) is answered byte for byte
as the SDK's transport answers it, and every request that exchange does not take reaches that
transport unchanged."""

from __future__ import annotations

import json

import pytest

from hindsight.engine.access.keys import OPEN
from hindsight.mcp.servers import SCOPE_KEY, RequestState

JSON = (b"content-type", b"application/json")
ACCEPT = (b"accept", b"application/json, text/event-stream")


def _scope(headers: list[tuple[bytes, bytes]], bank: str, method: str = "POST") -> dict:
    """An ASGI scope as the router hands it on (mcp/routing.py)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8888),
        SCOPE_KEY: RequestState(who=OPEN, bank_id=bank),
    }


async def _answer(app, scope: dict, body: bytes) -> tuple[int, list, bytes]:
    """Status, headers and body an ASGI app sent for one request."""
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], start.get("headers", []), b"".join(m.get("body", b"") for m in sent[1:])


def _call(name: str, arguments=None, id_=1) -> dict:
    params: dict = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


# Requests the exchange answers itself: (body, extra headers)
PLAIN = [
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, []),
    ({"jsonrpc": "2.0", "id": "a-string-id", "method": "tools/list", "params": {}}, []),
    ({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}, [(b"mcp-protocol-version", b"2025-06-18")]),
    ({"jsonrpc": "2.0", "id": 7, "method": "ping"}, [(b"mcp-protocol-version", b"2025-11-25")]),
    (_call("recall", {"query": "Who keeps bees?"}), [(b"mcp-protocol-version", b"2025-03-26")]),
    (_call("recall", {"query": "Who keeps bees?", "max_tokens": 50}), []),
    (_call("recall", {"query": "bees", "types": '["world"]'}), []),  # a list sent as its JSON text
    (_call("recall", {"query": "bees", "tags": "not-a-list"}), []),  # never coerced into a list
    (_call("recall", {}), []),  # missing argument: a tool error naming it
    (_call("recall", {"query": "x" * 5000}), []),  # past the query limit: a tool error
    (_call("recall", {"query": "bees", "bank_id": "other"}), []),  # no bank argument on a bank URL
    (_call("recall", "not-an-object"), []),
    (_call("no_such_tool", {}), []),
    (_call("list_mental_models", {}), []),
    (_call("get_mental_model", {"mental_model_id": "00000000-0000-0000-0000-000000000000"}), []),
    (_call("get_operation", {"operation_id": "not-a-uuid"}), []),
    (_call("recall", {"query": "bees\u0000"}), []),  # NUL refused
    ({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}, []),
    ({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}, []),  # no params
    ({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}, []),
    ({"jsonrpc": "2.0", "id": 5, "method": "prompts/list"}, []),
    ({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"cursor": 5}}, []),
    ({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, [(b"content-type", b"application/json; charset=utf-8")]),
    ({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, [(b"accept", b"*/*")]),
    # methods the SDK answers itself
    ({"jsonrpc": "2.0", "id": 10, "method": "prompts/get", "params": {"name": "x"}}, []),  # -32602
    ({"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}, []),
    ({"jsonrpc": "2.0", "id": 12, "method": "resources/templates/list"}, []),
    ({"jsonrpc": "2.0", "id": 13, "method": "logging/setLevel", "params": {"level": "nope"}}, []),
    ({"jsonrpc": "2.0", "id": 14, "method": "completion/complete", "params": {}}, []),
    ({"jsonrpc": "2.0", "id": 15, "method": "server/discover"}, []),
    ({"jsonrpc": "2.0", "id": -3, "method": "tools/list", "params": None}, []),
    ({"jsonrpc": "2.0", "id": 2**63, "method": "tools/list"}, []),
    ({"jsonrpc": "2.0", "id": "", "method": "tools/list", "params": {"_meta": {"progressToken": 5}}}, []),
]

# Requests left to the SDK's transport: (raw body, headers replacing the defaults)
OTHERS = [
    (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode(), None),
    (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ).encode(),
        None,
    ),
    (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), None),
    (json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode(), None),  # a response
    (json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]).encode(), None),  # a batch
    (b"{nope", None),
    (b"", None),
    (b"[" * 300 + b"]" * 300, None),
    (json.dumps({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}).encode(), None),
    (json.dumps({"jsonrpc": "2.0", "id": None, "method": "tools/list"}).encode(), None),
    (json.dumps({"jsonrpc": "2.0", "id": True, "method": "tools/list"}).encode(), None),
    (json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5}).encode(), None),
    (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(), [ACCEPT]),  # no Content-Type
    (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        [ACCEPT, (b"content-type", b"text/plain")],
    ),
    (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        [ACCEPT, (b"content-type", b"application/jsonx")],
    ),
    (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(), [JSON, (b"accept", b"text/html")]),
    (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        [ACCEPT, JSON, (b"mcp-protocol-version", b"1999-01-01")],
    ),
    (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        [ACCEPT, JSON, (b"mcp-protocol-version", b"2026-07-28")],
    ),
    (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        [ACCEPT, JSON, (b"mcp-protocol-version", b"")],
    ),
]


@pytest.fixture
async def surfaces(app, rest, bank):
    """The exchange in front of the single-bank server, and the SDK's session manager behind it,
    with a memory in the bank; calls that reach the manager are counted."""
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Ivo keeps bees on the roof"})
    assert r.status_code == 200, r.text
    exchange = await app.mcp.single.exchange()
    manager = exchange.manager
    reached: list[bytes] = []
    handle = manager.handle_request

    async def counted(scope, receive, send):
        reached.append(scope["path"].encode())
        await handle(scope, receive, send)

    manager.handle_request = counted
    try:
        yield exchange, handle, reached
    finally:
        manager.handle_request = handle


@pytest.mark.parametrize("body, extra", PLAIN, ids=[f"plain{i}" for i in range(len(PLAIN))])
async def test_a_plain_request_is_answered_as_the_sdk_answers_it(surfaces, bank, body, extra):
    exchange, sdk, reached = surfaces
    names = {k for k, _ in extra}
    headers = [h for h in (ACCEPT, JSON) if h[0] not in names] + extra
    raw = json.dumps(body).encode()
    ours = await _answer(exchange, _scope(headers, bank), raw)
    assert reached == []  # answered in one exchange
    theirs = await _answer(sdk, _scope(headers, bank), raw)
    assert ours == theirs
    assert ours[0] == 200 and json.loads(ours[2])["id"] == body["id"]


@pytest.mark.parametrize("raw, headers", OTHERS, ids=[f"other{i}" for i in range(len(OTHERS))])
async def test_every_other_request_reaches_the_sdk_unchanged(surfaces, bank, raw, headers):
    exchange, sdk, reached = surfaces
    headers = [ACCEPT, JSON] if headers is None else headers
    ours = await _answer(exchange, _scope(headers, bank), raw)
    assert reached == [b"/mcp"]
    theirs = await _answer(sdk, _scope(headers, bank), raw)
    assert ours == theirs


async def test_a_body_past_the_sdks_limit_is_refused_before_it_is_read(surfaces, bank):
    exchange, sdk, reached = surfaces
    big = json.dumps(_call("recall", {"query": "x" * (5 * 1024 * 1024)})).encode()
    status, _, body = await _answer(exchange, _scope([ACCEPT, JSON], bank), big)
    assert (status, body) == (413, b"Request body too large") and reached == []


async def test_a_retain_in_one_exchange_is_stored(surfaces, rest, bank):
    """A write through the exchange: stored once, readable over REST, answered with its ids."""
    exchange, _, reached = surfaces
    raw = json.dumps(_call("retain", {"content": "Ivo sold honey at the market"})).encode()
    status, _, body = await _answer(exchange, _scope([ACCEPT, JSON], bank), raw)
    result = json.loads(body)["result"]
    assert status == 200 and not result["isError"] and reached == []
    (memory_id,) = result["structuredContent"]["memory_ids"]
    r = await rest.get(f"/v1/banks/{bank}/memories/{memory_id}")
    assert r.status_code == 200 and r.json()["text"] == "Ivo sold honey at the market"


async def test_a_client_that_hangs_up_mid_body_is_not_answered(surfaces, bank, caplog):
    """Half a body, then the connection closes: there is nobody to answer, and nothing to log
    (the SDK's transport logged an error with its traceback and wrote a 500 to the closed
    connection)."""
    exchange, _, reached = surfaces
    sent: list = []
    messages = [
        {"type": "http.request", "body": b'{"jsonrpc": "2.0", "id": 1, "method": "tools/li', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    with caplog.at_level("DEBUG"):
        await exchange(_scope([ACCEPT, JSON], bank), receive, send)
    assert sent == [] and reached == []
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text


async def test_a_notification_or_initialize_is_parsed_once(surfaces, bank, monkeypatch):
    """What the SDK's transport answers is not parsed first by the exchange as well (a 4 MiB
    notification cost twice the CPU)."""
    import hindsight.mcp.single_exchange as exchange_module

    parsed: list[bytes] = []
    from_json = exchange_module.pydantic_core.from_json

    class Counting:
        @staticmethod
        def from_json(data, *args, **kw):
            parsed.append(data)
            return from_json(data, *args, **kw)

    monkeypatch.setattr(exchange_module, "pydantic_core", Counting)
    exchange, _, reached = surfaces
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"x": "y" * 100_000}})
    init = OTHERS[1][0]  # a valid initialize
    for raw in (note.encode(), init):
        await _answer(exchange, _scope([ACCEPT, JSON], bank), raw)
    assert parsed == [] and len(reached) == 2
    await _answer(exchange, _scope([ACCEPT, JSON], bank), json.dumps(_call("list_mental_models", {})).encode())
    assert len(parsed) == 1 and len(reached) == 2

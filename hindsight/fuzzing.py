"""Fuzzing the MCP tools from their own input schemas, the REST routes from the OpenAPI document, and
the OAuth endpoints with every form encoding a client can send (tests and `bench/fuzz.py`; never
used by the server; needs the `test` extra: Schemathesis, which brings Hypothesis).

Why: every tool's arguments are published as a JSON schema, so arguments that fit it, arguments
that almost fit it and hostile values (NUL, lone surrogates, dates off the calendar, numbers past
64 bits, JSON text where a list belongs) can be drawn for every tool without writing a case by
hand. Each call goes over real HTTP to a running server, as a client's would. A call passes when
the server answers a result that matches the tool's output schema, or a tool error (SEP-1303: a
result flagged `isError`) of the kinds a client may cause (an invalid argument, something not
found, not allowed, too large, in conflict), its message as text and its body as structured
content; a JSON-RPC error only for what is not a tool call at all (arguments that are not an
object). Anything else (an HTTP 5xx, a reset connection, a tool error the server caused, a bad
argument answered as a protocol error) is a failure.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

# The tool errors a client may cause (engine/errors.py codes); not internal, database_unavailable,
# llm_unavailable, unavailable: those are the server's.
CLIENT_ERRORS = {"bad_request", "invalid_argument", "not_found", "unauthorized", "forbidden", "too_large", "conflict"}
# JSON-RPC errors for a malformed tools/call (its arguments not an object): invalid params or request.
PROTOCOL_ERRORS = {-32602, -32600}
MAX_URL_BYTES = 32 * 1024
HOSTILE_STRINGS = [
    "",
    " ",
    "a\x00b",
    "\x00",
    "a\ud800b",
    "\udfff",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "-0001-01-01",
    '["a", "b"',
    '["a", "b"]',
    '{"a": 1}',
    "x" * 5000,
    "../../etc/passwd",
    "'; DROP TABLE memories; --",
    "http://169.254.169.254/latest/meta-data/",
    # Han characters spread over the block, most of which jieba's tagger never saw (language/chinese_names.py)
    "".join(chr(0x4E00 + i * 7919 % 0x51D6) for i in range(3_000)),
]


@dataclass
class FuzzReport:
    face: str
    calls: int = 0
    by_target: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        what = {"MCP": "tools", "OAuth": "routes"}.get(self.face, "operations")
        return f"{self.calls} {self.face} requests over {len(self.by_target)} {what}, {len(self.failures)} failures"

    def count(self, target: str) -> None:
        self.calls += 1
        self.by_target[target] = self.by_target.get(target, 0) + 1

    def fail(self, problem: str) -> None:
        if len(self.failures) < 200:
            self.failures.append(problem)


def _values():
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=40)
        | st.sampled_from(HOSTILE_STRINGS)
    )
    return st.recursive(
        scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=8
    )


def _operations(tools: list[dict]):
    """The tools as the operations of an OpenAPI document (each tool's arguments its request
    body), so that Schemathesis draws arguments for them: valid ones, and (negative mode) ones
    that break the schema on purpose."""
    import schemathesis

    spec = {
        "openapi": "3.1.0",
        "info": {"title": "MCP tools", "version": "1"},
        "paths": {
            f"/{t['name']}": {
                "post": {
                    "requestBody": {"required": True, "content": {"application/json": {"schema": t["inputSchema"]}}},
                    "responses": {"200": {"description": "the tool's result"}},
                }
            }
            for t in tools
        },
    }
    schema = schemathesis.openapi.from_dict(spec)
    return {t["name"]: schema[f"/{t['name']}"]["POST"] for t in tools}


def arguments(operation, names: list[str]):
    """Arguments for one tool: valid by its schema, invalid on purpose, or its argument names
    with any JSON values (hostile strings among them)."""
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    def body(case) -> Any:
        return case.body.decode("latin-1") if isinstance(case.body, bytes) else case.body

    drawn = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE).map(body),
        operation.as_strategy(GenerationMode.NEGATIVE).map(body),
        st.dictionaries(st.sampled_from(names) if names else st.text(max_size=8), _values(), max_size=6),
    )
    return drawn


def call_problem(http: httpx.Client, path: str, tool: dict, args: Any) -> str | None:
    """What is wrong with the server's answer to one tools/call, or None."""
    import jsonschema

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool["name"], "arguments": args}}
    try:
        r = http.post(
            path,
            content=json.dumps(body).encode(),
            headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
        )
    except httpx.TransportError as exc:
        return f"{tool['name']}: {type(exc).__name__} for {args!r:.300}"
    if r.status_code >= 500:
        return f"{tool['name']}: HTTP {r.status_code} for {args!r:.300}"
    try:
        answer = r.json()
    except ValueError:
        return f"{tool['name']}: HTTP {r.status_code}, not JSON, for {args!r:.300}"
    if r.status_code != 200:
        return None if answer.get("error") else f"{tool['name']}: HTTP {r.status_code} {answer!r:.300}"
    if "error" in answer:
        code = answer["error"].get("code")
        if code in PROTOCOL_ERRORS and not isinstance(args, dict):
            return None
        return f"{tool['name']}: JSON-RPC {code} {answer['error']!r:.300} for {args!r:.300}"
    result = answer.get("result", {})
    if result.get("isError"):
        return _tool_error_problem(tool["name"], result, args)
    schema, structured = tool.get("outputSchema"), result.get("structuredContent")
    if schema and structured is not None:
        try:
            jsonschema.validate(structured, schema)
        except jsonschema.ValidationError as exc:
            return f"{tool['name']}: result does not match its output schema: {exc.message:.300}"
    return None


def _tool_error_problem(name: str, result: dict, args: Any) -> str | None:
    """What is wrong with a tool error, or None: it must be one a client may cause, its message the
    text a model reads and its body the structured content a program reads."""
    body = result.get("structuredContent")
    if not isinstance(body, dict) or not isinstance(body.get("message"), str):
        return f"{name}: tool error without its body {result!r:.300}"
    if body.get("error") not in CLIENT_ERRORS:
        return f"{name}: tool error {body.get('error')!r}: {body['message']:.300} for {args!r:.300}"
    if [c.get("text") for c in result.get("content") or []] != [body["message"]]:
        return f"{name}: tool error whose text is not its message {result!r:.300}"
    return None


def _runner(http: httpx.Client, path: str, tool: dict, operation, report: FuzzReport, examples: int):
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(args=arguments(operation, sorted(tool["inputSchema"].get("properties", {}))))
    def run(args: Any) -> None:
        report.count(tool["name"])
        problem = call_problem(http, path, tool, args)
        if problem is not None:
            report.fail(problem)

    return run


def fuzz_mcp(
    base_url: str, path: str, examples: int, seed: int | None = None, headers: dict | None = None
) -> FuzzReport:
    """`examples` drawn calls of every tool the endpoint at `path` lists."""
    from hypothesis import seed as with_seed

    report = FuzzReport("MCP")
    with httpx.Client(base_url=base_url, timeout=120, headers=headers) as http:
        listed = http.post(
            path,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        ).json()["result"]["tools"]
        operations = _operations(listed)
        for tool in listed:
            run = _runner(http, path, tool, operations[tool["name"]], report, examples)
            run = with_seed(seed)(run) if seed is not None else run
            run()
    return report


def fuzz_rest(base_url: str, examples: int, seed: int | None = None, headers: dict | None = None) -> FuzzReport:
    """`examples` valid and `examples` invalid requests (Schemathesis's positive and negative
    modes) for every operation of the server's OpenAPI document, each answer checked for a 5xx
    and against the documented status codes, content types, headers and schemas. Schemathesis's
    data-acceptance checks are left out: the request models are stricter than JSON Schema can say
    (tags non-blank, dates on the calendar, bank ids by pattern), so valid-looking requests are
    rightly refused with a 4xx."""
    import schemathesis
    from hypothesis import seed as with_seed
    from schemathesis.checks import not_a_server_error
    from schemathesis.core.result import Err
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        response_headers_conformance,
    ]
    report = FuzzReport("REST")
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    for result in schema.get_all_operations():
        if isinstance(result, Err):  # an operation whose schema cannot be read is a failure too
            report.fail(f"OpenAPI document: {result.err()}")
            continue
        run = _rest_runner(result.ok(), base_url, checks, report, examples, headers or {})
        run = with_seed(seed)(run) if seed is not None else run
        run()
    return report


def _rest_runner(operation, base_url: str, checks: list, report: FuzzReport, examples: int, headers: dict):
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    drawn = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @settings(max_examples=2 * examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=drawn)
    def run(case) -> None:
        # A request line past ~64 KB is refused by uvicorn's HTTP parser, with its own plain-text
        # 400, before any route sees it: such a URL tests the HTTP server, not the routes.
        assume(len(case.formatted_path) + len(urlencode(case.query or {}, doseq=True)) <= MAX_URL_BYTES)
        report.count(operation.label)
        try:
            case.call_and_validate(base_url=base_url, checks=checks, headers=headers)
        except (Exception, BaseExceptionGroup) as exc:  # Schemathesis's FailureGroup is a BaseExceptionGroup
            report.fail(f"{operation.label}: {type(exc).__name__}: {exc!s:.600}")

    return run


# ---- OAuth: forms of every shape --------------------------------------------------------------------
# Each OAuth route and the parameters it reads; the fuzzer sends these, others, and repeats.
OAUTH_ROUTES: dict[str, list[str]] = {
    "/token": [
        "grant_type",
        "code",
        "redirect_uri",
        "client_id",
        "client_secret",
        "code_verifier",
        "refresh_token",
        "scope",
        "resource",
    ],
    "/revoke": ["token", "token_type_hint", "client_id", "client_secret"],
    "/authorize": [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
    ],
    "/register": [
        "redirect_uris",
        "client_name",
        "token_endpoint_auth_method",
        "grant_types",
        "response_types",
        "scope",
        "contacts",
        "client_uri",
        "logo_uri",
    ],
    "/v1/oauth/consent/lookup": ["request_id"],
    "/v1/oauth/consent/decide": ["request_id", "approve", "bank_id", "access"],
}
# How a client may encode a body: the right way, and each wrong way a client can send.
FORM_ENCODINGS = [
    "urlencoded",
    "raw-bytes",
    "latin-1",
    "multipart",
    "multipart-without-boundary",
    "json",
    "text",
    "no-content-type",
    "query",
]
_FORM = "application/x-www-form-urlencoded"


def _oauth_values(known: list[str]):
    from hypothesis import strategies as st

    return st.one_of(
        st.sampled_from(known),
        st.sampled_from(HOSTILE_STRINGS),
        st.text(max_size=40),
        st.sampled_from(["authorization_code", "refresh_token", "code", "S256", "plain", "read write", "none"]),
        st.just("x" * 70_000),
        st.builds(lambda s: "hsa_" + s, st.text(max_size=20)),
    )


def _form_body(pairs: list[tuple[str, Any]], encoding: str) -> tuple[bytes, str | None]:
    """A body of `pairs` in `encoding`, and its Content-Type (None: no header)."""
    text_pairs = [(n, v if isinstance(v, str) else json.dumps(v)) for n, v in pairs]
    if encoding in ("urlencoded", "text", "no-content-type", "query"):
        body = urlencode(text_pairs, errors="surrogatepass").encode()
        return body, {"text": "text/plain", "no-content-type": None}.get(encoding, _FORM)
    if encoding == "raw-bytes":  # not percent-encoded: raw UTF-8, lone surrogates, NUL, line breaks
        raw = [n.encode("utf-8", "surrogatepass") + b"=" + v.encode("utf-8", "surrogatepass") for n, v in text_pairs]
        return b"&".join(raw) + b"&\xff\xfe=\xc0", _FORM
    if encoding == "latin-1":
        return urlencode(text_pairs, encoding="latin-1", errors="replace").encode(), f"{_FORM}; charset=latin-1"
    if encoding.startswith("multipart"):
        parts = b"".join(
            b'--hsfuzz\r\nContent-Disposition: form-data; name="'
            + n.encode("utf-8", "surrogatepass")
            + b'"\r\n\r\n'
            + v.encode("utf-8", "surrogatepass")
            + b"\r\n"
            for n, v in text_pairs
        )
        body = parts + b"--hsfuzz--\r\n"
        return (
            body,
            "multipart/form-data"
            if encoding == "multipart-without-boundary"
            else "multipart/form-data; boundary=hsfuzz",
        )
    body = json.dumps(dict(pairs)).encode()  # json: what /register and the consent routes take
    return body, "application/json"


def oauth_request(known: list[str]):
    """A drawn OAuth request: (route, encoding, [(name, value)], with an HTTP Basic header)."""
    from hypothesis import strategies as st

    @st.composite
    def draw(d):
        route = d(st.sampled_from(sorted(OAUTH_ROUTES)))
        names = st.one_of(st.sampled_from(OAUTH_ROUTES[route]), st.text(max_size=12))
        pairs = d(st.lists(st.tuples(names, _oauth_values(known)), max_size=8))
        if pairs and d(st.booleans()):
            pairs = [*pairs, pairs[0]]  # a repeated parameter
        if d(st.integers(0, 9)) == 0:
            pairs = pairs + [(f"f{i}", "v") for i in range(1500)]  # past any parser's count of fields
        if route == "/register" and d(st.booleans()):
            pairs = [(n, [v] if n in ("redirect_uris", "contacts", "grant_types") else v) for n, v in pairs]
        return route, d(st.sampled_from(FORM_ENCODINGS)), pairs, d(st.booleans())

    return draw()


def oauth_problem(
    http: httpx.Client, base_url: str, route: str, encoding: str, pairs, basic: bool, known
) -> str | None:
    """What is wrong with the answer to one drawn OAuth request, or None: a 5xx, a reset
    connection, an answer that is not JSON (an error page or a redirect from /authorize), or a
    redirect anywhere but the consent page (no client the fuzzer knows was ever approved, so no
    error may be sent to a client)."""
    body, kind = _form_body(pairs, encoding)
    headers = {"content-type": kind} if kind else {}
    if basic:
        headers["authorization"] = "Basic " + base64.b64encode(f"{known[0]}:secret".encode()).decode()
    what = f"{route} {encoding} {pairs[:6]!r:.300}"
    try:
        if encoding == "query" and len(body) <= 8000:  # a URL stays within what HTTP servers read
            r = http.request("GET" if route == "/authorize" else "POST", f"{route}?{body.decode()}", headers=headers)
        else:
            r = http.post(route, content=body, headers=headers)
    except httpx.TransportError as exc:
        return f"{what}: {type(exc).__name__}"
    if r.status_code >= 500:
        return f"{what}: HTTP {r.status_code} {r.text[:200]!r}"
    if r.status_code in (301, 302, 303, 307, 308):
        location = r.headers.get("location", "")
        if route != "/authorize" or not location.startswith(f"{base_url}/ui/consent.html#request="):
            return f"{what}: redirected to {location[:200]!r}"
        return None
    kind = r.headers.get("content-type", "")
    if route == "/authorize" and kind.startswith("text/html"):
        return None
    if r.status_code == 200 and route == "/revoke" and not r.content:
        return None  # RFC 7009: revoked, or nothing to revoke
    try:
        r.json()
    except ValueError:
        return f"{what}: HTTP {r.status_code}, {kind or 'no content type'}, not JSON: {r.text[:200]!r}"
    return None


def fuzz_oauth(base_url: str, examples: int, seed: int | None = None) -> FuzzReport:
    """Each OAuth route (and the consent page's) in every form encoding once, then `examples`
    drawn requests for each; needs a server running its own authorization server (API keys on)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as with_seed

    report = FuzzReport("OAuth")
    with httpx.Client(base_url=base_url, timeout=120, follow_redirects=False) as http:
        known = []
        for method in ("none", "client_secret_basic"):
            r = http.post(
                "/register",
                json={"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": method},
                headers={"x-forwarded-for": "198.51.100.7"},  # not the address the fuzzed requests count against
            )
            r.raise_for_status()
            known.append(r.json()["client_id"])
        known += ["http://127.0.0.1:9/cb", "https://127.0.0.1/client.json", "hsr_" + "a" * 43, "hsc_" + "a" * 43]

        # every route in every encoding once, with plausible parameters, whatever the draws reach
        for route, names in OAUTH_ROUTES.items():
            plausible = [(name, known[0] if name == "client_id" else "x") for name in names]
            for encoding in FORM_ENCODINGS:
                report.count(route)
                if (problem := oauth_problem(http, base_url, route, encoding, plausible, False, known)) is not None:
                    report.fail(problem)

        @settings(
            max_examples=examples * len(OAUTH_ROUTES),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(drawn=oauth_request(known))
        def run(drawn) -> None:
            route, encoding, pairs, basic = drawn
            report.count(route)
            problem = oauth_problem(http, base_url, route, encoding, pairs, basic, known)
            if problem is not None:
                report.fail(problem)

        (with_seed(seed)(run) if seed is not None else run)()
    return report

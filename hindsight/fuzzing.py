"""Fuzzing the MCP tools from their own input schemas (tests and `bench/fuzz.py`; never used by
the server; needs the `test` extra: Schemathesis, which brings Hypothesis).

Why: every tool's arguments are published as a JSON schema, so arguments that fit it, arguments
that almost fit it and hostile values (NUL, lone surrogates, dates off the calendar, numbers past
64 bits, JSON text where a list belongs) can be drawn for every tool without writing a case by
hand. Each call goes over real HTTP to a running server, as a client's would. A call passes when
the server answers a result that matches the tool's output schema, or a JSON-RPC error of the
kinds a client may cause (-32602 bad argument, -32001 not allowed); anything else (an HTTP 5xx, a
reset connection, an internal error, a tool result flagged as an error) is a failure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

CLIENT_ERRORS = {-32602, -32001, -32600, -32700}
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
]


@dataclass
class FuzzReport:
    calls: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.calls} MCP calls over {len(self.by_tool)} tools, {len(self.failures)} failures"


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
        return None if code in CLIENT_ERRORS else f"{tool['name']}: JSON-RPC {code} {answer['error']!r:.300}"
    result = answer.get("result", {})
    if result.get("isError"):
        return f"{tool['name']}: tool error {result.get('content')!r:.300} for {args!r:.300}"
    schema, structured = tool.get("outputSchema"), result.get("structuredContent")
    if schema and structured is not None:
        try:
            jsonschema.validate(structured, schema)
        except jsonschema.ValidationError as exc:
            return f"{tool['name']}: result does not match its output schema: {exc.message:.300}"
    return None


def _runner(http: httpx.Client, path: str, tool: dict, operation, report: FuzzReport, examples: int):
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(args=arguments(operation, sorted(tool["inputSchema"].get("properties", {}))))
    def run(args: Any) -> None:
        report.calls += 1
        report.by_tool[tool["name"]] = report.by_tool.get(tool["name"], 0) + 1
        problem = call_problem(http, path, tool, args)
        if problem is not None and len(report.failures) < 200:
            report.failures.append(problem)

    return run


def fuzz_mcp(base_url: str, path: str, examples: int, seed: int | None = None) -> FuzzReport:
    """`examples` drawn calls of every tool the endpoint at `path` lists."""
    from hypothesis import seed as with_seed

    report = FuzzReport()
    with httpx.Client(base_url=base_url, timeout=120) as http:
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

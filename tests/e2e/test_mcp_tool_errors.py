"""MCP tool errors as the specification says (2025-11-25, SEP-1303), through real clients over
HTTP against a server whose LLM misbehaves on purpose (the stub's faults): the official SDK
client, MCP Inspector's CLI and Claude Code all get a tool's failure as its result, flagged
`isError`, with the message as text and the code, cause and wait as structured content; a tool
this server does not have stays a protocol error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from conftest import Server, fresh_database, llm_env, mcp_session
from support import retain, tool_error

NODE_MODULES = Path(
    os.environ.get("HINDSIGHT_NODE_MODULES") or Path(__file__).resolve().parents[2] / ".cache/node/node_modules"
)
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
FACT = "Ana plays chess in Lisbon."


@pytest.fixture(scope="module")
def llm():
    from hindsight.stub_llm import StubLLM

    s = StubLLM().start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def faulty(pg_url, llm):
    s = Server(llm_env(llm, fresh_database(pg_url, "mcp_tool_errors"), llm_timeout=3)).start()
    yield s
    s.stop()


@pytest.fixture
def filled(faulty, bank):
    with faulty.http() as api:
        retain(api, bank, {"content": FACT})
    return bank


async def test_the_sdk_client_gets_tool_errors_as_results(faulty, filled):
    bank = filled
    async with mcp_session(f"{faulty.url}/mcp/{bank}/") as c:
        failed = tool_error(await c.call_tool("reflect", {"query": "What does Ana play? [[fault:error]]"}))
        assert failed["error"] == "llm_unavailable" and failed["cause"] == "provider_error", failed
        assert failed["message"].startswith("reflect: the LLM provider failed (") and "retry_after" not in failed
        limited = tool_error(await c.call_tool("reflect", {"query": "What does Ana play? [[fault:rate_limit]]"}))
        assert limited["cause"] == "rate_limit" and limited["retry_after"] >= 1, limited
        missing = tool_error(await c.call_tool("recall", {}))
        assert missing == {"error": "invalid_argument", "message": missing["message"], "field": "query"}
        unknown = tool_error(
            await c.call_tool("get_operation", {"operation_id": "00000000-0000-4000-8000-000000000000"})
        )
        assert unknown["error"] == "not_found" and unknown["field"] == "operation_id"
        # the same tool, well used, still answers its result
        ok = await c.call_tool("reflect", {"query": "What does Ana play?"})
        assert not ok.is_error and "chess" in ok.structured_content["answer"]
        with pytest.raises(MCPError) as e:  # a tool this server does not have: a protocol fault
            await c.call_tool("no_such_tool", {})
        assert e.value.error.code == -32602
    async with mcp_session(f"{faulty.url}/mcp/", {"X-Bank-Id": bank}) as c:
        failed = tool_error(await c.call_tool("reflect", {"query": "Chess? [[fault:truncated]]"}))
        assert failed["cause"] == "truncated"
        bad_bank = tool_error(await c.call_tool("recall", {"query": "x", "bank_id": "no spaces"}))
        assert bad_bank["field"] == "bank_id"


def inspector(url: str, *args: str) -> tuple[int, dict | None, str]:
    """MCP Inspector's CLI (`--cli URL --transport http ...`): its exit code, the JSON it printed
    and its stderr."""
    p = subprocess.run(
        [str(INSPECTOR), "--cli", url, "--transport", "http", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        printed = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        printed = None
    return p.returncode, printed, p.stderr


@pytest.mark.skipif(not INSPECTOR.exists(), reason="MCP Inspector not installed (scripts/test.sh installs it with npm)")
def test_mcp_inspector_gets_tool_errors_as_results(faulty, filled):
    url = f"{faulty.url}/mcp/{filled}/"
    call = ("--method", "tools/call", "--tool-name")
    code, printed, err = inspector(url, *call, "reflect", "--tool-arg", "query=What does Ana play? [[fault:hang]]")
    assert code != 0 and "isError" in err, (code, printed, err)  # the CLI exits non-zero on a tool error
    assert printed is not None and printed["isError"] is True, (printed, err)
    body = tool_error(printed)
    assert body["error"] == "llm_unavailable" and body["cause"] == "timeout", body
    code, printed, err = inspector(url, *call, "recall")
    assert printed is not None and tool_error(printed)["field"] == "query", (code, printed, err)
    code, printed, err = inspector(url, *call, "reflect", "--tool-arg", "query=What does Ana play?")
    assert code == 0 and printed["isError"] is False and "chess" in printed["structuredContent"]["answer"], err
    code, printed, err = inspector(url, *call, "no_such_tool")
    assert code != 0 and "not found" in err, (code, printed, err)


CLAUDE = os.environ.get("HINDSIGHT_CLAUDE_BIN") or next(
    iter(sorted(NODE_MODULES.glob("@anthropic-ai/claude-code-*/claude"))), None
)


@pytest.mark.skipif(
    not CLAUDE or not Path(CLAUDE).exists(), reason="Claude Code not installed (scripts/test.sh installs it with npm)"
)
def test_claude_code_hands_the_model_the_tool_error(faulty, llm, filled, tmp_path):
    """Claude Code, its model played by the stub (Anthropic's Messages API): the model asks for a
    tool call, Claude Code makes it over MCP and shows the model the result. A failed reflect and
    a call missing its argument reach the model as tool errors in the server's words."""
    config = json.dumps({"mcpServers": {"hindsight": {"type": "http", "url": f"{faulty.url}/mcp/{filled}/"}}})
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{llm.port}",
        "ANTHROPIC_API_KEY": "sk-stub",
    }

    def ask(tool: str, arguments: dict) -> dict:
        before = len(llm.tool_results)
        prompt = f"[[call:{tool} {json.dumps(arguments)}]]"
        allowed = f"mcp__hindsight__{tool}"
        p = subprocess.run(
            [str(CLAUDE), "-p", prompt, "--mcp-config", config, "--strict-mcp-config", "--allowedTools", allowed,
             "--output-format", "json"],
            env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )  # fmt: skip
        assert p.returncode == 0, p.stdout + p.stderr
        assert len(llm.tool_results) == before + 1, (p.stdout, llm.tool_results[before:])
        return llm.tool_results[-1]

    seen = ask("reflect", {"query": "What does Ana play? [[fault:error]]"})
    assert seen["is_error"] is True and seen["text"].startswith("reflect: the LLM provider failed ("), seen
    seen = ask("recall", {"max_tokens": 100})
    assert seen["is_error"] is True and seen["text"].startswith("query:"), seen
    seen = ask("recall", {"query": "What does Ana play?"})
    assert seen["is_error"] is False and "chess" in seen["text"], seen

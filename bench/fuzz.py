"""The long fuzzing run: every REST route and every MCP tool (single- and multi-bank) with valid,
invalid and hostile input, and the OAuth endpoints with forms in every encoding a client can send
(hindsight/fuzzing.py), against real servers over HTTP in three set-ups: open (no keys, no LLM),
API keys on (an admin key, a key scoped to one bank, and the OAuth authorization server), and an
LLM (the stub) behind reflect and fact extraction. Prints requests sent and failures per face;
exits 1 on any failure or on a traceback in a server's log.

    .venv/bin/python bench/fuzz.py                 # 100 examples per operation and tool (~15 min)
    .venv/bin/python bench/fuzz.py --examples 20   # a quick pass
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
from locomo import save  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.fuzzing import fuzz_mcp, fuzz_oauth, fuzz_rest  # noqa: E402
from hindsight.stub_llm import StubLLM  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

ADMIN = "fuzz-admin-key-0123456789"
SECRETS = {"HINDSIGHT_API_SECRETS_KEY": "fuzz-secrets-key-0123456789-abcdefgh"}  # so that webhooks can be made


def run_setup(name: str, env: dict, examples: int, seed: int, headers: dict, bank: str) -> dict:
    server = Server({**env, "HINDSIGHT_API_LOG_LEVEL": "warning"}).start()
    out: dict = {"setup": name}
    try:
        if name == "keys":
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
                key = admin.post("/v1/keys", json={"name": "fuzz", "role": "bank", "banks": [bank]}).json()["key"]
            scoped = {"Authorization": f"Bearer {key}"}
        t0 = time.time()
        reports = [fuzz_rest(server.url, examples, seed, headers)]
        reports += [fuzz_mcp(server.url, path, examples, seed, headers) for path in (f"/mcp/{bank}/", "/mcp/")]
        if name == "keys":
            reports.append(fuzz_mcp(server.url, "/mcp/", examples, seed, scoped))
            reports.append(fuzz_oauth(server.url, examples, seed))
        out["seconds"] = round(time.time() - t0, 1)
        out["reports"] = [
            {"face": r.face, "requests": r.calls, "targets": len(r.by_target), "failures": r.failures} for r in reports
        ]
        for r in reports:
            print(f"  {name}: {r.line()}", flush=True)
            for f in r.failures[:10]:
                print("    ", f[:300], flush=True)
    finally:
        server.stop()
    log = server.log_path.read_text()
    out["tracebacks"] = log.count("Traceback")
    return out


def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-fuzz-"))
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    url = pg.start()
    stub = StubLLM().start()
    out: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "examples": args.examples, "setups": []}
    try:
        setups = {
            "open": ({"HINDSIGHT_API_DATABASE_URL": url, **SECRETS}, {}),
            "keys": (
                {
                    "HINDSIGHT_API_DATABASE_URL": url,
                    "HINDSIGHT_API_TENANT_EXTENSION": "hindsight.extensions.builtin.tenant:ApiKeyTenantExtension",
                    "HINDSIGHT_API_TENANT_API_KEY": ADMIN,
                    **SECRETS,
                },
                {"Authorization": f"Bearer {ADMIN}"},
            ),
            "llm": (
                {
                    "HINDSIGHT_API_DATABASE_URL": url,
                    "HINDSIGHT_API_LLM_MODEL": "openai/stub-model",
                    "HINDSIGHT_API_LLM_BASE_URL": stub.base_url,
                    "HINDSIGHT_API_LLM_API_KEY": "stub",
                    **SECRETS,
                },
                {},
            ),
        }
        for name in args.setups.split(","):
            env, headers = setups[name]
            print(f"== {name}", flush=True)
            out["setups"].append(run_setup(name, env, args.examples, args.seed, headers, f"fuzz_{name}"))
    finally:
        stub.stop()
        pg.stop()
    save(out, "fuzz")
    requests = sum(r["requests"] for s in out["setups"] for r in s["reports"])
    failures = sum(len(r["failures"]) for s in out["setups"] for r in s["reports"])
    tracebacks = sum(s["tracebacks"] for s in out["setups"])
    print(f"\n== Hindsight fuzzing == {out['machine']} {out['date']}")
    print(f"{requests} requests, {failures} failures, {tracebacks} tracebacks in the servers' logs")
    out["totals"] = {"requests": requests, "failures": failures, "tracebacks": tracebacks}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=100, help="Drawn per operation and per tool (x2 for REST).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--setups", default="open,keys,llm")
    result = main(ap.parse_args())
    print(json.dumps(result["totals"]))
    sys.exit(1 if result["totals"]["failures"] or result["totals"]["tracebacks"] else 0)

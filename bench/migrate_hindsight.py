"""`hindsight migrate` against a real Hindsight server (hindsight-api-slim 0.9.1 from the package
registry, in a virtualenv of its own), on loopback, offline: its database a database of our
embedded PostgreSQL (pgvector), its LLM and embedder the stub (hindsight/stub_llm.py: chat and
/v1/embeddings), its fact extraction in its `chunks` mode (each chunk stored as a fact, no LLM),
its reranker `rrf`, and tiktoken's encodings from the files litellm ships (they are fetched
from the internet otherwise). Not run in CI (it installs ~200 packages).

It fills the reference with banks (profile, settings, documents of several chunks with tags,
metadata and times, mental models, directives), then migrates every bank into a fresh server of
ours with the real CLI and checks what arrived; runs it again (idempotent: nothing new); and
migrates once more into another server, interrupting the command part-way (SIGINT) and running
it again (resumable: the same result, nothing twice). Prints and saves the figures
(bench/results/migrate_hindsight.json).

    .venv/bin/python bench/migrate_hindsight.py                        # 3 banks x 300 documents
    .venv/bin/python bench/migrate_hindsight.py --banks 1 --documents 20
    .venv/bin/python bench/migrate_hindsight.py --record tests/e2e/fixtures/hindsight-0.9.1-migrate.json --banks 2 --documents 3
      # records what migrate reads from the reference, for tests/e2e/test_migrate.py's replay

The reference's virtualenv is kept in bench/results/hindsight-venv (reused when present).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx
from locomo import save  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.stub_llm import StubLLM  # noqa: E402
from hindsight.testing import Recorder, Server, free_port, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench" / "results" / "hindsight-venv"
REFERENCE = "hindsight-api-slim==0.9.1"
WORDS = "Ana Bruno Carla Diego Elena Farid Greta Hugo Ines Joao".split()
PLACES = "Porto Lisbon Vigo Braga Faro Coimbra Evora Leiria Aveiro Tomar".split()


def ensure_reference() -> Path:
    exe = VENV / "bin" / "hindsight-api"
    if not exe.exists():
        print(f"installing {REFERENCE} into {VENV} (from the package registry)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", REFERENCE], check=True)
    return exe


def tiktoken_cache() -> str:
    found = sorted(VENV.glob("lib/python*/site-packages/litellm/litellm_core_utils/tokenizers"))
    if not found:
        raise SystemExit("litellm's tokenizer files are missing from the reference's virtualenv")
    return str(found[0])


async def create_database(url: str, name: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return url.replace("/postgres?", f"/{name}?", 1)


def start_reference(exe: Path, db_url: str, stub: StubLLM, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        {
            "HINDSIGHT_API_DATABASE_URL": db_url,
            "HINDSIGHT_API_HOST": "127.0.0.1",
            "HINDSIGHT_API_PORT": str(port),
            "HINDSIGHT_API_LLM_PROVIDER": "openai",
            "HINDSIGHT_API_LLM_BASE_URL": stub.base_url,
            "HINDSIGHT_API_LLM_API_KEY": "stub",
            "HINDSIGHT_API_LLM_MODEL": "stub-model",
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": stub.base_url,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "stub",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "stub-embed",
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            "HINDSIGHT_API_RETAIN_EXTRACTION_MODE": "chunks",
            "HINDSIGHT_API_ENABLE_OBSERVATIONS": "false",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TIKTOKEN_CACHE_DIR": tiktoken_cache(),
        }
    )
    proc = subprocess.Popen([str(exe)], env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 240
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the reference exited ({proc.returncode}); its log: {log}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"the reference did not come up; its log: {log}")


def document(bank: int, n: int, paragraphs: int) -> str:
    out = []
    for p in range(paragraphs):
        who, where = WORDS[(n + p) % 10], PLACES[(n * 3 + p + bank) % 10]
        out.append(
            f"{who} met {WORDS[(n + p + 1) % 10]} in {where} on day {n}-{p}. "
            + f"They talked about the {where} market, the trains to {PLACES[(p + 4) % 10]} and note {bank}-{n}-{p}. "
            * 6
        )
    return "\n\n".join(out)


def fill(url: str, banks: int, documents: int) -> dict:
    """The reference's banks, their documents retained in batches; what was written, counted."""
    filled: dict = {"banks": {}}
    with httpx.Client(base_url=url, timeout=600) as h:
        for b in range(banks):
            bank = f"migrate-bench-{b}"
            p = f"/v1/default/banks/{bank}"
            h.put(
                p, json={"name": f"Bench {b}", "mission": f"Remember the bench's people, bank {b}."}
            ).raise_for_status()
            h.put(
                f"{p}/profile", json={"disposition": {"skepticism": 4, "literalism": 2, "empathy": 5}}
            ).raise_for_status()
            h.patch(
                f"{p}/config", json={"updates": {"retain_mission": "People and places.", "recall_max_tokens": 2048}}
            )
            for start in range(0, documents, 25):
                items = [
                    {
                        "content": document(b, n, 3),
                        "document_id": f"doc-{b}-{n:05d}",
                        "tags": [f"bank-{b}", f"group-{n % 4}"],
                        "metadata": {"source": "bench", "n": str(n)},
                        "timestamp": f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}T10:00:00Z",
                        "context": "bench",
                    }
                    for n in range(start, min(documents, start + 25))
                ]
                h.post(f"{p}/memories", json={"items": items}).raise_for_status()
            for m in range(2):
                h.post(
                    f"{p}/mental-models",
                    json={"id": f"people-{m}", "name": f"People {m}", "source_query": "Who met whom?", "tags": []},
                ).raise_for_status()
            for d in range(2):
                h.post(
                    f"{p}/directives", json={"name": f"rule {d}", "content": f"Answer briefly ({d}).", "priority": d}
                )
            stats = h.get(f"{p}/stats").json()
            filled["banks"][bank] = {"documents": stats["total_documents"], "facts": stats["total_nodes"]}
    return filled


def migrate(
    source: str, target: Server, state: Path, interrupt_after: float | None = None
) -> tuple[float, dict | None]:
    cmd = [sys.executable, "-m", "hindsight.cli.main", "migrate", "--from", source, "--all", "--url", target.url]
    cmd += ["--state", str(state), "--json"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if interrupt_after is not None:
        time.sleep(interrupt_after)
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    seconds = time.perf_counter() - started
    if interrupt_after is not None:
        return seconds, None
    if proc.returncode != 0:
        raise SystemExit(f"migrate failed ({proc.returncode}):\n{err[-3000:]}\n{out[-3000:]}")
    return seconds, {s["bank_id"]: s for s in json.loads(out)}


def arrived(target: Server, banks: list[str]) -> dict:
    out = {}
    with httpx.Client(base_url=target.url, timeout=120) as h:
        for bank in banks:
            p = f"/v1/default/banks/{bank}"
            out[bank] = {
                "documents": h.get(f"{p}/documents", params={"limit": 1}).json()["total"],
                "memories": h.get(f"/v1/banks/{bank}/memories", params={"limit": 1}).json()["total"],
                "mental_models": h.get(f"{p}/mental-models").json()["total"],
                "name": h.get(f"{p}/profile").json()["name"],
            }
    return out


def main(args) -> dict:
    exe = ensure_reference()
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-migrate-"))
    pg = EmbeddedPostgres(tmp / "pg", cleanup="delete")
    url = pg.start()
    stub = StubLLM().start()

    # the machine may be shared: its load when the run began and ended qualifies the figures
    out: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "reference": REFERENCE}
    out["load_average_before"] = os.getloadavg()
    ref = None
    servers: list[Server] = []
    try:
        ref_db = asyncio.run(create_database(url, "reference"))
        ref, ref_url = start_reference(exe, ref_db, stub, tmp / "reference.log")
        t0 = time.perf_counter()
        out["filled"] = fill(ref_url, args.banks, args.documents)
        out["fill_seconds"] = round(time.perf_counter() - t0, 1)
        print(f"reference filled in {out['fill_seconds']} s: {out['filled']}", flush=True)
        banks = sorted(out["filled"]["banks"])
        recorder = Recorder(ref_url).start() if args.record else None
        source = recorder.url if recorder else ref_url

        ours = Server({"HINDSIGHT_API_DATABASE_URL": asyncio.run(create_database(url, "ours_a"))}).start()
        servers.append(ours)
        seconds, summary = migrate(source, ours, tmp / "state-a.json")
        out["first_run"] = {"seconds": round(seconds, 1), "summary": summary, "arrived": arrived(ours, banks)}
        facts = sum(s["copied"].get("facts", 0) for s in (summary or {}).values())
        out["first_run"]["facts_per_second"] = round(facts / seconds, 1) if seconds else None
        print(f"first run: {seconds:.1f} s, {facts} facts; arrived {out['first_run']['arrived']}", flush=True)
        if recorder:
            recorder.stop()
            recording = {"hindsight": REFERENCE, "recorded": out["date"], "exchanges": recorder.exchanges}
            Path(args.record).write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
            print(f"recorded {len(recorder.exchanges)} exchanges into {args.record}", flush=True)
            source = ref_url

        seconds, summary = migrate(source, ours, tmp / "state-a.json")
        new = {b: {k: v for k, v in s["copied"].items() if k in ("documents", "facts")} for b, s in summary.items()}
        out["second_run"] = {"seconds": round(seconds, 1), "new": new, "arrived": arrived(ours, banks)}
        print(f"second run: {seconds:.1f} s, new {new}", flush=True)

        other = Server({"HINDSIGHT_API_DATABASE_URL": asyncio.run(create_database(url, "ours_b"))}).start()
        servers.append(other)
        cut = max(2.0, out["first_run"]["seconds"] / 3)
        migrate(source, other, tmp / "state-b.json", interrupt_after=cut)
        seconds, summary = migrate(source, other, tmp / "state-b.json")
        out["interrupted"] = {
            "interrupted_after_seconds": round(cut, 1),
            "resume_seconds": round(seconds, 1),
            "arrived": arrived(other, banks),
        }
        out["same_result"] = out["interrupted"]["arrived"] == out["first_run"]["arrived"]
        print(f"interrupted after {cut:.1f} s, resumed in {seconds:.1f} s; same result: {out['same_result']}")
    finally:
        for s in servers:
            s.stop()
        if ref is not None:
            ref.terminate()
            ref.wait(60)
        stub.stop()
        pg.stop()
    out["load_average_after"] = os.getloadavg()
    save(out, "migrate_hindsight")
    print(f"\n== hindsight migrate from {REFERENCE} == {out['machine']} {out['date']}")
    keys = ("load_average_before", "load_average_after", "first_run", "second_run", "interrupted", "same_result")
    print(json.dumps({k: out[k] for k in keys}, indent=1)[:4000])
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--banks", type=int, default=3)
    ap.add_argument("--documents", type=int, default=300, help="Per bank.")
    ap.add_argument("--record", default=None, help="Write what migrate reads from the reference here.")
    main(ap.parse_args())

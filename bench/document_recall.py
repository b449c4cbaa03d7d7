"""Document search quality: LoCoMo's ten conversations imported as ten Markdown documents (sessions
in order, one line a turn), each question asked through `POST /v1/banks/{bank}/documents/query`
in every mode. A question is answered at k when one of the first k chunks returned holds one of
its evidence turns. Also the time a search takes, one at a time.

    .venv/bin/python bench/document_recall.py
    .venv/bin/python bench/document_recall.py --chunk-size 600

What it says about ranking, not about an answer: a chunk is ~1,200 characters of dialogue by
default, so several questions share one; the semantic arm reads the first 256 tokens of a chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import re
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from locomo import CATS, latency, locomo, save  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

KS = (1, 3, 5, 10)
MODES = ("keyword", "vector", "hybrid")
BANK = "locomo_kb"


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def documents() -> tuple[list[dict], dict]:
    """One Markdown file a conversation, and each turn's text by (conversation, turn id)."""
    files, turns = [], {}
    for conv in locomo.locomo_conversations():
        lines = []
        for s in conv["sessions"]:
            lines.append(f"\n# Session {s['session_index']}, {s['timestamp_raw']}\n")
            for t in s["turns"]:
                lines.append(f"{t['speaker']}: {t['text']}")
                turns[(conv["sample_id"], t["turn_id"])] = norm(t["text"])
        text = "\n".join(lines)
        files.append({"name": f"{conv['sample_id']}.md", "content_base64": base64.b64encode(text.encode()).decode()})
    return files, turns


async def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-docrecall-"))
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    server = Server({"HINDSIGHT_API_DATABASE_URL": pg.start(), "HINDSIGHT_API_LOG_LEVEL": "warning"}).start()
    out: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d")}
    try:
        files, turns = documents()
        async with httpx.AsyncClient(base_url=server.url, timeout=3600) as client:
            body: dict = {"files": files}
            if args.chunk_size:
                body["chunk_size"] = args.chunk_size
            r = await client.post(f"/v1/banks/{BANK}/documents", json=body, params={"wait": True})
            r.raise_for_status()
            res = r.json()["result"]
            assert res["failed"] == 0, res
            out["chunks"] = sum(f["chunks"] for f in res["files"])
            questions = [q for q in locomo.locomo_questions() if q["category"] in CATS and q["evidence"]]
            hits: dict = {m: {k: [] for k in KS} for m in MODES}
            took: dict = {m: [] for m in MODES}
            for q in questions:
                evidence = [e[:200] for d in q["evidence"] if (e := turns.get((q["sample_id"], d)))]
                if not evidence:
                    continue
                for mode in MODES:
                    t0 = time.perf_counter()
                    r = await client.post(
                        f"/v1/banks/{BANK}/documents/query",
                        json={"query": q["question"], "mode": mode, "top_k": max(KS), "strictness": 0},
                    )
                    took[mode].append(time.perf_counter() - t0)
                    r.raise_for_status()
                    ranked = [
                        c["file_path"] == f"{q['sample_id']}.md" and any(e in norm(c["content"]) for e in evidence)
                        for c in r.json()["results"]
                    ]
                    for k in KS:
                        hits[mode][k].append(1.0 if any(ranked[:k]) else 0.0)
            out["questions"] = len(hits["hybrid"][1])
            out["evidence_recall"] = {m: {f"r@{k}": round(statistics.mean(hits[m][k]), 3) for k in KS} for m in MODES}
            out["search_ms"] = {m: latency(took[m]) for m in MODES}
    finally:
        server.stop()
        pg.stop()
    print(f"\n== Hindsight document search on LoCoMo == {out['machine']} {out['date']}")
    print(f"{out['chunks']} chunks, {out['questions']} questions")
    for m in MODES:
        er = out["evidence_recall"][m]
        print(f"  {m:8s} " + "  ".join(f"@{k}: {er[f'r@{k}']:.3f}" for k in KS) + f"   search {out['search_ms'][m]}")
    save(out, "document_recall")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk-size", type=int, default=0, help="characters a chunk (default: the server's)")
    asyncio.run(main(ap.parse_args()))

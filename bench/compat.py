"""The Hindsight-compatible API against our own on the same conversations: LoCoMo retained two ways
(our REST as bench/locomo.py does it, and POST /v1/default/banks/{bank}/memories with one call per
session, items with content, timestamp, context and a document_id, async false), then every
question recalled with max_tokens 4096 through both recall routes on both kinds of bank, the four
in turn question by question so that the machine's load falls on each alike, and on the Hindsight
bank through Hindsight's own Python client (hindsight-client, its defaults, the time its caller
waits: the request, the answer and the client's parsing of it). Prints p50/p95 of each, so a
difference can be told to come from how the bank was made, the answer's shape or the client.

    .venv/bin/python bench/compat.py                    # 3 conversations, ~2 minutes
    .venv/bin/python bench/compat.py --conversations 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hindsight_client import Hindsight  # noqa: E402
from locomo import FRESH, Client, asked, bank_of, locomo, pct, retain_all, save  # noqa: E402

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

ROUTES = {
    "ours": lambda bank: f"/v1/banks/{bank}/recall",
    "compat": lambda bank: f"/v1/default/banks/{bank}/memories/recall",
}


async def retain_compat(client, convs) -> float:
    """Each session one call of the Hindsight API, as its own clients send a conversation."""
    t0 = time.perf_counter()
    for conv in convs:
        bank = "hs_" + bank_of(conv)
        for s in conv["sessions"]:
            items = [
                {
                    "content": f"{t['speaker']}: {t['text']}"
                    + (f" [shares image: {t['image_caption']}]" if t["image_caption"] else ""),
                    "timestamp": t["timestamp"] + "Z",
                    "context": f"conversation between {conv['speaker_a']} and {conv['speaker_b']}",
                    "document_id": f"{conv['sample_id']}:{s['session_id']}",
                }
                for t in s["turns"]
            ]
            r = await client.post(f"/v1/default/banks/{bank}/memories", json={"items": items, "async": False})
            r.raise_for_status()
    return time.perf_counter() - t0


async def run(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-compat-"))
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    server = Server({"HINDSIGHT_API_DATABASE_URL": pg.start(), "HINDSIGHT_API_LOG_LEVEL": "warning"}).start(timeout=180)
    out: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "conversations": args.conversations}
    try:
        convs = list(locomo.locomo_conversations())[: args.conversations]
        questions, last = asked(convs)
        async with Client(server.url) as client:
            _, ours_s = await retain_all(client, convs, _NoRss())
            compat_s = await retain_compat(client, convs)
            out["retain_seconds"] = {"ours": round(ours_s, 1), "compat": round(compat_s, 1)}
            kinds = {"ours": bank_of, "compat": lambda q: "hs_" + bank_of(q)}
            lat: dict[str, list[float]] = {f"{b} bank, {r} route": [] for b in kinds for r in ROUTES}
            lat["compat bank, hindsight-client"] = []
            hs = Hindsight(base_url=server.url)
            sizes: dict[str, list[int]] = {k: [] for k in lat if "client" not in k}
            for q in questions[:20]:  # warm both routes and banks
                for bank in kinds.values():
                    for path in ROUTES.values():
                        await recall(client, path(bank(q)), q, last[q["sample_id"]])
            for q in questions:
                for b, bank in kinds.items():
                    for r, path in ROUTES.items():
                        dt, size = await recall(client, path(bank(q)), q, last[q["sample_id"]])
                        lat[f"{b} bank, {r} route"].append(dt)
                        sizes[f"{b} bank, {r} route"].append(size)
                t0 = time.perf_counter()
                await hs.arecall(
                    "hs_" + bank_of(q), FRESH(q["question"]), max_tokens=4096, query_timestamp=last[q["sample_id"]]
                )
                lat["compat bank, hindsight-client"].append(time.perf_counter() - t0)
            await hs.aclose()
            out["recall_ms"] = {
                k: {
                    "p50": round(pct(v, 50) * 1000, 2),
                    "p95": round(pct(v, 95) * 1000, 2),
                    "kb": round(statistics.mean(sizes[k]) / 1024, 1) if sizes.get(k) else None,
                }
                for k, v in lat.items()
            }
    finally:
        server.stop()
        pg.stop()
    save(out, "compat")
    return out


async def recall(client, path: str, q: dict, when: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = await client.post(path, json={"query": FRESH(q["question"]), "max_tokens": 4096, "query_timestamp": when})
    r.raise_for_status()
    return time.perf_counter() - t0, len(r.content)


class _NoRss:
    def sample(self) -> None:
        pass


def report(out: dict) -> None:
    print(f"\n== Hindsight-compatible API against ours == {out['machine']} {out['date']}")
    print(f"{out['conversations']} LoCoMo conversations; retain seconds {out['retain_seconds']}")
    for k, v in out["recall_ms"].items():
        size = f"  answer {v['kb']:.1f} KB" if v["kb"] is not None else ""
        print(f"  {k:30s} p50 {v['p50']:6.2f} ms  p95 {v['p95']:6.2f} ms{size}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=3)
    result = asyncio.run(run(ap.parse_args()))
    report(result)
    print(json.dumps(result["recall_ms"]))

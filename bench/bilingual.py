"""Memory in two languages: the same conversations and questions in English and in Chinese
(bench/bilingual_data.py: 444 turns, 100 questions, each with its evidence turn), retained into
one bank per language through REST and recalled with the question's own time. Prints evidence
recall@1/5/10 per language and per kind of question, the keyword arm alone (mode=keyword), recall
@1/3/10 in each mode of the hand-written paraphrase questions (bilingual_data.PARAPHRASE_QUESTIONS,
asked of a bank holding their lines beside the turns), the time to retain each language's turns
(one request; the Chinese one loads jieba's dictionary and the gloss dictionary on its way),
recall latency (after one recall per bank that is not timed) and the server's peak memory, for
the embedding model chosen.

    .venv/bin/python bench/bilingual.py                          # the default model (MiniLM)
    .venv/bin/python bench/bilingual.py --model multilingual     # Universal Sentence Encoder
    .venv/bin/python bench/bilingual.py --env HINDSIGHT_API_EMBEDDING_CHINESE_GLOSS=false
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bilingual_data import build, paraphrases  # noqa: E402
from locomo import save  # noqa: E402

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

KS = (1, 5, 10)
PARA_KS = (1, 3, 10)


async def run(args) -> dict:
    turns, questions = build()
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-bilingual-"))
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    env = {"HINDSIGHT_API_DATABASE_URL": pg.start(), "HINDSIGHT_API_LOG_LEVEL": "warning"}
    if args.model:
        env["HINDSIGHT_API_EMBEDDING_MODEL"] = args.model
    env.update(kv.split("=", 1) for kv in args.env)
    server = Server(env).start()
    out: dict = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "model": args.model or "default",
        "env": args.env,
        "turns": len(turns),
        "questions": len(questions),
    }
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=600) as c:
            out["embedding_model"] = (await c.get("/health")).json()["embedding_model"]
            para_turns, para_questions = paraphrases()
            for lang in ("en", "zh"):
                t0 = time.perf_counter()
                await retain(c, f"bi_{lang}", turns, lang)
                out[f"{lang}_retain_s"] = round(time.perf_counter() - t0, 2)
                await retain(c, f"para_{lang}", turns + para_turns, lang)
            for lang in ("en", "zh"):
                warm = {"query": questions[0].text[lang], "max_tokens": 4096}
                (await c.post(f"/v1/banks/bi_{lang}/recall", json=warm)).raise_for_status()
            for lang in ("en", "zh"):
                for mode in ("hybrid", "keyword", "vector"):
                    res, lat = await ask(c, f"bi_{lang}", questions, lang, mode, KS)
                    if mode == "hybrid":
                        res["ms_p50"] = round(statistics.median(lat) * 1000, 1)
                        res["ms_p95"] = round(sorted(lat)[int(0.95 * len(lat))] * 1000, 1)
                    out[f"{lang}_{mode}"] = res
                    out[f"{lang}_para_{mode}"], _ = await ask(c, f"para_{lang}", para_questions, lang, mode, PARA_KS)
        out["server_peak_rss_mb"] = peak_rss_mb(server.proc.pid)
    finally:
        server.stop()
        pg.stop()
    save(out, f"bilingual-{args.model or 'default'}")
    return out


async def retain(c: httpx.AsyncClient, bank: str, turns: list, lang: str) -> None:
    items = [
        {"content": t.text[lang], "timestamp": t.when.isoformat() + "Z", "metadata": {"turn": t.turn_id}} for t in turns
    ]
    r = await c.post(f"/v1/banks/{bank}/memories", json={"items": items})
    r.raise_for_status()


async def ask(c: httpx.AsyncClient, bank: str, questions: list, lang: str, mode: str, ks) -> tuple[dict, list]:
    """Evidence recall@k of `questions` on `bank`, overall and per kind, and each recall's time."""
    hits: dict = defaultdict(lambda: defaultdict(list))
    lat = []
    for q in questions:
        t0 = time.perf_counter()
        r = await c.post(
            f"/v1/banks/{bank}/recall",
            json={
                "query": q.text[lang],
                "query_timestamp": q.asked_at.isoformat() + "Z",
                "mode": mode,
                "max_tokens": 4096,
            },
        )
        lat.append(time.perf_counter() - t0)
        r.raise_for_status()
        ranked = [m["metadata"].get("turn") for m in r.json()["results"]]
        for k in ks:
            got = float(any(e in ranked[:k] for e in q.evidence))
            hits[k]["all"].append(got)
            hits[k][q.kind].append(got)
    res = {f"r@{k}": {kind: round(statistics.mean(v), 3) for kind, v in sorted(hits[k].items())} for k in ks}
    return res, lat


def peak_rss_mb(pid: int) -> int:
    """The largest peak resident memory (VmHWM) of the server process and its children."""
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    peaks = []
    for p in procs:
        status = Path(f"/proc/{p.pid}/status").read_text()
        peaks.append(int(status.split("VmHWM:")[1].split()[0]) // 1024)
    return max(peaks)


def report(out: dict) -> None:
    print(f"\n== Hindsight bilingual benchmark == {out['machine']} {out['date']}")
    print(f"model: {out['embedding_model']}; {out['turns']} turns and {out['questions']} questions per language")
    print(f"settings: {' '.join(out['env']) or 'defaults'}; server peak RSS {out['server_peak_rss_mb']} MB")
    for lang in ("en", "zh"):
        h = out[f"{lang}_hybrid"]
        line = "  ".join(f"@{k}: {h[f'r@{k}']['all']:.3f}" for k in KS)
        kinds = ", ".join(f"{kind} {v:.2f}" for kind, v in h["r@10"].items() if kind != "all")
        print(f"{lang}: evidence recall {line}; @10 by kind: {kinds}")
        print(
            f"    keyword arm alone @10 {out[f'{lang}_keyword']['r@10']['all']:.3f}, "
            f"vector arm alone @10 {out[f'{lang}_vector']['r@10']['all']:.3f}; "
            f"latency p50 {h['ms_p50']} ms, p95 {h['ms_p95']} ms; retain {out[f'{lang}_retain_s']} s"
        )
        para = ", ".join(
            f"{mode} " + " / ".join(f"{out[f'{lang}_para_{mode}'][f'r@{k}']['all']:.2f}" for k in PARA_KS)
            for mode in ("hybrid", "keyword", "vector")
        )
        print(f"    paraphrases @1 / @3 / @10: {para}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="", help="HINDSIGHT_API_EMBEDDING_MODEL (default: the server's default)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="a server setting (repeatable)")
    result = asyncio.run(run(ap.parse_args()))
    report(result)
    print(json.dumps({k: v for k, v in result.items() if k.endswith("hybrid")}))

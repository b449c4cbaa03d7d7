"""Knowledge-base benchmark: document import throughput (PDF pages per second, end to end through
the import operation: read, chunk, embed, store) and rag_search latency with 5 phrases through
the plain JSON-RPC call RAG clients make (POST /mcp/<bank>/, no session).

The corpus is real text: LoCoMo conversations laid out as multi-page PDFs written with fpdf2
(about 2,000 characters per page).

    .venv/bin/python bench/documents.py                 # 20 PDFs x 10 pages, 200 searches
    .venv/bin/python bench/documents.py --files 50 --pages 20
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from locomo import CATS, latency, locomo, pct, save  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

PAGE_CHARS = 2_000


def corpus_pages(n_pages: int) -> list[str]:
    """Consecutive ~2,000-character pages of LoCoMo dialogue."""
    pages, buf = [], []
    for conv in locomo.locomo_conversations():
        for s in conv["sessions"]:
            for t in s["turns"]:
                buf.append(f"{t['speaker']}: {t['text']}")
                if sum(len(x) for x in buf) >= PAGE_CHARS:
                    pages.append("\n".join(buf))
                    buf = []
                    if len(pages) == n_pages:
                        return pages
    raise SystemExit(f"LoCoMo has fewer than {n_pages} pages of text")


def make_pdf(pages: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 5, text.encode("latin-1", "replace").decode("latin-1"))
    return bytes(pdf.output())


async def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-docs-"))
    # The same embedded PostgreSQL, settings included, as `hindsight serve` starts.
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    pg_url = pg.start()
    server = Server({"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_API_LOG_LEVEL": "warning"}).start()
    out = {"machine": machine(), "date": time.strftime("%Y-%m-%d")}
    try:
        pages = corpus_pages(args.files * args.pages)
        files = [
            {
                "name": f"conversation-{i:03d}.pdf",
                "content_base64": base64.b64encode(make_pdf(pages[i * args.pages : (i + 1) * args.pages])).decode(),
            }
            for i in range(args.files)
        ]
        bank = "bench_docs"
        async with httpx.AsyncClient(base_url=server.url, timeout=3600) as client:
            t0 = time.perf_counter()
            r = await client.post(f"/v1/banks/{bank}/documents", json={"files": files}, params={"wait": True})
            r.raise_for_status()
            dt = time.perf_counter() - t0
            res = r.json()["result"]
            assert res["failed"] == 0, res
            n_pages = sum(f["pages"] for f in res["files"])
            chunks = sum(f["chunks"] for f in res["files"])
            out["import"] = {
                "files": args.files,
                "pages": n_pages,
                "chunks": chunks,
                "seconds": round(dt, 1),
                "pages_per_s": round(n_pages / dt, 1),
                "chunks_per_s": round(chunks / dt, 1),
                "chars_per_s": round(sum(map(len, pages)) / dt),
            }
            print(json.dumps(out["import"]), flush=True)

            questions = [q["question"] for q in locomo.locomo_questions() if q["category"] in CATS]
            calls = [questions[i * 5 : (i + 1) * 5] for i in range(args.searches)]

            async def search(phrases):
                body = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "rag_search", "arguments": {"search_phrases": phrases}},
                }
                t = time.perf_counter()
                r = await client.post(f"/mcp/{bank}/", json=body, headers={"Content-Type": "application/json"})
                r.raise_for_status()
                assert r.json()["result"]["status"] == "success", r.text
                return time.perf_counter() - t

            for phrases in calls[:5]:
                await search(phrases)  # warm up
            seq = [await search(p) for p in calls]
            sem = asyncio.Semaphore(8)

            async def bounded(p):
                async with sem:
                    return await search(p)

            t0 = time.perf_counter()
            conc = await asyncio.gather(*(bounded(p) for p in calls))
            wall = time.perf_counter() - t0
            out["rag_search"] = {
                "phrases_per_call": 5,
                "calls": len(calls),
                "chunks_in_bank": chunks,
                **latency(seq),
                "concurrent_8_calls_per_s": round(len(calls) / wall, 1),
                "concurrent_8_ms_p95": round(pct(conc, 95) * 1000, 1),
            }
            print(json.dumps(out["rag_search"]), flush=True)
            out["server_rss_mb"] = round(psutil.Process(server.proc.pid).memory_info().rss / 2**20)
    finally:
        server.stop()
        pg.stop()
    save(out, "documents")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--searches", type=int, default=200)
    print(json.dumps(asyncio.run(main(ap.parse_args())), indent=2))

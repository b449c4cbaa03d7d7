"""Webhooks: what an event costs the call that fires it, and how fast deliveries go out.

First the statement every retain now runs to queue its event's deliveries (notify/events.fire),
timed on its own against the database, on a bank without webhooks and one with a webhook, beside
`SELECT 1` (a round trip and nothing else). Then retains of one short item, one at a time over REST, alternated between a bank without webhooks
and one with a webhook subscribed to retain.completed (its delivery is queued in the retain's
transaction); then the time from each retain's answer to its event at a receiver on loopback
(p50/p95), and a burst of retains whose deliveries are timed until the last one arrives.

    .venv/bin/python bench/webhooks.py                  # 400 retains a side, a burst of 500
    .venv/bin/python bench/webhooks.py --retains 100 --burst 200
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo as lb  # noqa: E402  (bench/locomo.py: timing and reporting helpers)

from hindsight.db.sql import Q  # noqa: E402


class Receiver:
    """Records when each delivery (by its event's memory id) arrived."""

    def __init__(self):
        self.arrived: dict[str, float] = {}
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                for memory_id in body["data"].get("memory_ids", []):
                    receiver.arrived[memory_id] = time.perf_counter()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


async def statement_cost(url: str, rounds: int) -> dict:
    """ms per call of SELECT 1 and of the fire statement (no webhook / one), alternated, each in
    a transaction rolled back (nothing is queued)."""
    conn = await asyncpg.connect(url)
    times: dict[str, list[float]] = {"select_1": [], "fire_no_webhook": [], "fire_one_webhook": []}
    try:
        for _ in range(rounds):
            for name, bank in (("select_1", None), ("fire_no_webhook", "quiet"), ("fire_one_webhook", "hooked")):
                tr = conn.transaction()
                await tr.start()
                t0 = time.perf_counter()
                if bank is None:
                    await conn.fetchval("SELECT 1")
                else:
                    await conn.fetch(Q.webhook_fire, bank, ["retain.completed"], '{"data": {}}', 8)
                times[name].append(time.perf_counter() - t0)
                await tr.rollback()
    finally:
        await conn.close()
    return {k: round(lb.pct(v, 50) * 1000, 3) for k, v in times.items()}


def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-webhooks-"))
    pg = lb.EmbeddedPostgres(tmp, cleanup="delete")
    env = {
        "HINDSIGHT_API_DATABASE_URL": pg.start(),
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true",
        "HINDSIGHT_API_SECRETS_KEY": "bench-secrets-key-0123456789-abcdefgh",
    }
    server = lb.Server(env).start(timeout=180)
    receiver = Receiver()
    out: dict = {"machine": lb.machine(), "date": time.strftime("%Y-%m-%d"), "retains": args.retains}
    try:
        with httpx.Client(base_url=server.url, timeout=120) as api:
            api.post("/v1/banks/quiet/memories", json={"content": "warm-up"}).raise_for_status()
            r = api.post("/v1/banks/hooked/webhooks", json={"url": receiver.url, "event_types": ["retain.completed"]})
            r.raise_for_status()
            out["statement_ms_p50"] = asyncio.run(statement_cost(env["HINDSIGHT_API_DATABASE_URL"], args.rounds))
            lat: dict[str, list[float]] = {"quiet": [], "hooked": []}
            sent: dict[str, float] = {}
            for i in range(args.retains * 2):
                bank = "quiet" if i % 2 == 0 else "hooked"
                t0 = time.perf_counter()
                r = api.post(f"/v1/banks/{bank}/memories", json={"content": f"Turn {i}: Lena paints murals in Porto."})
                done = time.perf_counter()
                r.raise_for_status()
                lat[bank].append(done - t0)
                if bank == "hooked":
                    sent[r.json()["memory_ids"][0]] = done
            deadline = time.time() + 120
            while len(receiver.arrived) < len(sent) and time.time() < deadline:
                time.sleep(0.05)
            waits = [receiver.arrived[m] - t for m, t in sent.items() if m in receiver.arrived]
            out["retain_no_webhook"] = lb.latency(lat["quiet"])
            out["retain_with_webhook"] = lb.latency(lat["hooked"])
            out["event_after_answer"] = lb.latency(waits)
            out["delivered"] = f"{len(waits)}/{len(sent)}"

            receiver.arrived.clear()
            items = [f"Burst {i}: Omar fixes bikes." for i in range(args.burst)]
            t0 = time.perf_counter()
            ids = []
            for text in items:
                r = api.post("/v1/banks/hooked/memories", json={"content": text})
                r.raise_for_status()
                ids.append(r.json()["memory_ids"][0])
            sent_in = time.perf_counter() - t0
            deadline = time.time() + 300
            while len(receiver.arrived) < len(ids) and time.time() < deadline:
                time.sleep(0.05)
            last = max(receiver.arrived.values()) - t0 if receiver.arrived else float("nan")
            out["burst"] = {
                "retains": len(ids),
                "retains_s": round(sent_in, 2),
                "all_delivered_s": round(last, 2),
                "delivered": len(receiver.arrived),
                "deliveries_per_s": round(len(receiver.arrived) / last, 1),
            }
    finally:
        server.stop()
        pg.stop()
    print("\n== Hindsight webhooks ==", out["machine"], out["date"])
    st = out["statement_ms_p50"]
    print(
        f"statement p50: SELECT 1 {st['select_1']} ms, fire (no webhook) {st['fire_no_webhook']} ms, "
        f"fire (one webhook) {st['fire_one_webhook']} ms"
    )
    print(
        f"retain, no webhook:      p50 {out['retain_no_webhook']['ms_p50']} ms, p95 {out['retain_no_webhook']['ms_p95']} ms"
    )
    print(
        f"retain, one webhook:     p50 {out['retain_with_webhook']['ms_p50']} ms, p95 {out['retain_with_webhook']['ms_p95']} ms"
    )
    print(
        f"event after the answer:  p50 {out['event_after_answer']['ms_p50']} ms, "
        f"p95 {out['event_after_answer']['ms_p95']} ms ({out['delivered']} delivered)"
    )
    b = out["burst"]
    print(
        f"burst: {b['retains']} retains in {b['retains_s']} s, all delivered after {b['all_delivered_s']} s "
        f"({b['delivered']} delivered, {b['deliveries_per_s']}/s)"
    )
    lb.save(out, "webhooks")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--retains", type=int, default=400, help="Retains on each side (alternated).")
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2000, help="Timed calls of each statement.")
    main(ap.parse_args())

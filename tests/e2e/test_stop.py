"""A stop drains: SIGTERM during a stream of retains answers every request it received (200, or
503 with Retry-After), readiness turns false first, a request still running when the grace
period ends is rolled back and answered 503, and every acknowledged write is there afterwards."""

from __future__ import annotations

import signal
import threading
import time
import uuid

import httpx

from conftest import Server, fresh_database, wait_for


def _writer(url: str, bank: str, stop: threading.Event, log: list, size: int) -> None:
    """Retains batches until the server says it is stopping; records (token, status, retry-after)."""
    with httpx.Client(base_url=url, timeout=60) as c:
        while not stop.is_set():
            token = uuid.uuid4().hex
            items = [{"content": f"Batch {token} line {i}: the ferry leaves at {i % 12} o'clock."} for i in range(size)]
            try:
                r = c.post(f"/v1/banks/{bank}/memories", json={"items": items})
            except httpx.TransportError as exc:  # sent after the server closed its socket
                log.append((token, "gone", type(exc).__name__))
                return
            log.append((token, r.status_code, r.headers.get("retry-after")))
            if r.status_code == 503:
                return


def _stored_tokens(url: str, bank: str) -> set[str]:
    with httpx.Client(base_url=url, timeout=60) as c:
        total = c.get(f"/v1/banks/{bank}/memories", params={"limit": 1}).json()["total"]
        texts = []
        for offset in range(0, total, 1000):
            page = c.get(f"/v1/banks/{bank}/memories", params={"limit": 1000, "offset": offset}).json()
            texts += [m["text"] for m in page["memories"]]
    return {t.split()[1] for t in texts}


def test_sigterm_drains_a_stream_of_retains(pg_url, bank):
    db = fresh_database(pg_url, "stop_drain")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db, "HINDSIGHT_API_SHUTDOWN_GRACE": "20"}).start()
    stop, log = threading.Event(), []
    writers = [threading.Thread(target=_writer, args=(s.url, bank, stop, log, 40)) for _ in range(6)]
    for w in writers:
        w.start()
    wait_for(lambda: len(log) >= 12, timeout=120)
    ready_during = []

    def probe():
        with httpx.Client(base_url=s.url, timeout=5) as c:
            while s.proc.poll() is None:
                try:
                    ready_during.append(c.get("/health/ready").status_code)
                except httpx.TransportError:
                    return
                time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    time.sleep(0.1)
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(60)
    stop.set()
    for t in [*writers, prober]:
        t.join(60)
    s.stop()
    statuses = [status for _, status, _ in log]
    assert 500 not in statuses and statuses.count(200) >= 12, statuses
    assert all(ra == "5" for _, status, ra in log if status == 503), log
    assert 503 in ready_during, ready_during  # readiness said "stopping" before the socket closed
    acked = {token for token, status, _ in log if status == 200}
    refused = {token for token, status, _ in log if status != 200}
    again = Server({"HINDSIGHT_API_DATABASE_URL": db}).start()
    try:
        stored = _stored_tokens(again.url, bank)
    finally:
        again.stop()
    assert acked <= stored, "an acknowledged retain was lost"
    assert not (refused & stored), "a refused retain was stored"
    assert "stopping: " in s.log_path.read_text()


def test_a_request_outliving_the_grace_period_is_rolled_back_and_answered_503(pg_url, bank):
    db = fresh_database(pg_url, "stop_grace")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db, "HINDSIGHT_API_SHUTDOWN_GRACE": "0.5"}).start()
    result: list = []
    items = [{"content": f"Slow batch line {i}: notes about the harbour and its boats, item {i}."} for i in range(5000)]

    def slow():
        with httpx.Client(base_url=s.url, timeout=120) as c:
            r = c.post(f"/v1/banks/{bank}/memories", json={"items": items})
            result.append((r.status_code, r.headers.get("retry-after"), r.json()))

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.0)  # the batch is being embedded
    s.proc.send_signal(signal.SIGTERM)
    t.join(120)
    s.proc.wait(60)
    s.stop()
    status, retry_after, body = result[0]
    assert status == 503 and retry_after == "5" and body["error"] == "unavailable", result
    again = Server({"HINDSIGHT_API_DATABASE_URL": db}).start()
    try:
        with again.http() as c:
            r = c.get(f"/v1/banks/{bank}/memories", params={"limit": 1})
            assert r.status_code in (200, 404) and (r.status_code == 404 or r.json()["total"] == 0), r.text
    finally:
        again.stop()
    assert "Traceback" not in s.log_path.read_text()

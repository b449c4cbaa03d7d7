"""No request is lost to the keep-alive race (docs/running.md, Keep-alive and Stopping): the server
keeps idle connections longer than clients and load balancers do, and a stop tells clients to
close their connections before it closes them, so every request sent is answered or refused at
connect."""

from __future__ import annotations

import random
import signal
import socket
import threading
import time

import httpx

from conftest import Server, fresh_database, wait_for


def _get_on(sock: socket.socket, path: str) -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_an_idle_connection_outlives_a_clients_idle_expiry(server):
    """A connection idle for longer than httpx keeps one (5 s, uvicorn's own default) still
    answers: the client, not the server, decides when an idle connection ends."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        assert _get_on(sock, "/health").startswith(b"HTTP/1.1 200")
        time.sleep(6.5)
        assert _get_on(sock, "/health").startswith(b"HTTP/1.1 200")


def test_pooled_clients_pausing_near_their_idle_expiry_lose_no_request(server, bank):
    """Pooled clients with common idle expiries (httpx's 5 s, aiohttp's 15 s) pausing around 5 s,
    uvicorn's own default, between recalls: every request is answered."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.post(
            f"/v1/banks/{bank}/memories", json={"content": "The lighthouse keeper feeds the gulls."}
        ).is_success
    lost: list[str] = []
    answered: list[int] = []

    def client(seed: int) -> None:
        rng = random.Random(seed)
        expiry = 5.0 if seed % 2 else 15.0
        with httpx.Client(base_url=server.url, timeout=30, limits=httpx.Limits(keepalive_expiry=expiry)) as c:
            end = time.monotonic() + 22
            while time.monotonic() < end:
                try:
                    answered.append(c.post(f"/v1/banks/{bank}/recall", json={"query": "gulls"}).status_code)
                except httpx.TransportError as exc:
                    lost.append(type(exc).__name__)
                time.sleep(rng.choice((rng.uniform(0.0, 0.2), rng.uniform(4.7, 5.3))))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not lost, lost
    assert len(answered) > 50 and set(answered) == {200}


def test_a_stop_under_load_answers_every_request_or_refuses_it_at_connect(pg_url, bank):
    """SIGTERM while pooled clients send recalls with short pauses: every request gets a response
    (200, or 503 while the server drains) or is refused at connect once it stopped listening;
    none is sent on a connection closed under it. Responses during the drain say
    Connection: close."""
    db = fresh_database(pg_url, "keep_alive_stop")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db, "HINDSIGHT_API_SHUTDOWN_GRACE": "10"}).start()
    with httpx.Client(base_url=s.url, timeout=30) as c:
        assert c.post(f"/v1/banks/{bank}/memories", json={"content": "The tide turns at noon."}).is_success
    outcomes: list[tuple[str, object]] = []
    draining_close: list[bool] = []
    done = threading.Event()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        refused = 0
        with httpx.Client(base_url=s.url, timeout=30) as c:
            while refused < 3 and not done.is_set():
                try:
                    r = c.post(f"/v1/banks/{bank}/recall", json={"query": "tide"})
                except httpx.ConnectError:
                    refused += 1
                    outcomes.append(("refused", None))
                except httpx.TransportError as exc:
                    outcomes.append(("lost", type(exc).__name__))
                else:
                    outcomes.append(("answered", r.status_code))
                    if r.status_code == 503:
                        draining_close.append(r.headers.get("connection") == "close")
                time.sleep(rng.uniform(0.0, 0.3))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    wait_for(lambda: sum(1 for o in outcomes if o == ("answered", 200)) >= 40, timeout=120)
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(timeout=60)
    done.set()
    for t in threads:
        t.join(timeout=60)
    s.stop()
    lost = [o for o in outcomes if o[0] == "lost"]
    assert not lost, lost
    assert {status for kind, status in outcomes if kind == "answered"} <= {200, 503}
    assert any(kind == "refused" for kind, _ in outcomes)
    assert draining_close and all(draining_close)

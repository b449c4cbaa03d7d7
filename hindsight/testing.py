"""Run a real `hindsight serve` process for tests and benchmarks (never mocked)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def cpu_model() -> str:
    """The CPU's model name: speed figures (and binaries) differ between an AVX-512 Xeon and an
    AVX2-only EPYC, so every benchmark prints it beside its figures."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                flags = Path("/proc/cpuinfo").read_text()
                level = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
                return f"{line.split(':', 1)[1].strip()} ({level})"
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def machine() -> str:
    """One line naming the machine a benchmark ran on."""
    import platform

    import psutil

    line = (
        f"{cpu_model()}, {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total // 2**30} GiB, Python {platform.python_version()}"
    )
    return line + huge_pages()


def huge_pages() -> str:
    """The machine line's ", N huge pages reserved" when the machine reserves any: the embedded
    PostgreSQL puts its buffer cache on them, which changes its CPU a recall (db/hugepages.py)."""
    try:
        reserved = int(Path("/proc/sys/vm/nr_hugepages").read_text())
    except (OSError, ValueError):
        return ""
    return f", {reserved} huge pages reserved" if reserved else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, env: dict, data_dir: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        self.env.update({"HINDSIGHT_API_PORT": str(self.port), "HINDSIGHT_API_LOG_LEVEL": "info"})
        if data_dir is not None:
            self.env["HINDSIGHT_API_DATA_DIR"] = str(data_dir)
        self.env.update(env)
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("HINDSIGHT_TEST_LOG_DIR", "/tmp")) / f"hindsight-test-{self.port}.log"

    def start(self, timeout: float = 60) -> Server:
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hindsight.cli.main", "serve"],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not become ready:\n" + self.log_path.read_text()[-3000:])

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        assert self.proc is not None, "stop() before start()"
        return self.proc.returncode

    def http(self, key: str | None = None, **headers) -> httpx.Client:
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


# ---- Hindsight's API, recorded and replayed (hindsight migrate's tests and bench) ------------------
def exchange_key(method: str, path: str, query: str) -> str:
    """One request, as recordings are looked up: method, path and the query's pairs, sorted."""
    pairs = sorted(p for p in query.split("&") if p)
    return f"{method.upper()} {path}?{'&'.join(pairs)}"


class Replay:
    """A server on loopback answering recorded exchanges (`{"exchanges": [{method, path, query,
    status, body}]}`) exactly as recorded; any other request is a 404 and is kept in `misses`.
    `fail_after`: past that many answers, every request is a 503 (an interruption)."""

    def __init__(self, recording: dict, fail_after: int | None = None):
        self.answers = {exchange_key(e["method"], e["path"], e["query"]): e for e in recording["exchanges"]}
        self.fail_after = fail_after
        self.served = 0
        self.misses: list[str] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Replay:
        async def answer(request: Request):
            key = exchange_key(request.method, request.url.path, request.url.query)
            if self.fail_after is not None and self.served >= self.fail_after:
                return JSONResponse({"detail": "replay: interrupted on purpose"}, 503)
            found = self.answers.get(key)
            if found is None:
                self.misses.append(key)
                return JSONResponse({"detail": f"replay: not recorded: {key}"}, 404)
            self.served += 1
            return JSONResponse(found["body"], found["status"])

        app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server and self._thread:
            self._server.should_exit = True
            self._thread.join(10)


class Recorder:
    """A proxy on loopback in front of a Hindsight server, keeping every GET exchange it passes
    on (what `hindsight migrate` reads), for Replay."""

    def __init__(self, upstream: str, headers: dict | None = None):
        self.upstream = upstream.rstrip("/")
        self.headers = headers or {}
        self.exchanges: list[dict] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Recorder:
        async def forward(request: Request):
            async with httpx.AsyncClient(base_url=self.upstream, timeout=300) as c:
                r = await c.request(request.method, request.url.path, params=request.url.query, headers=self.headers)
            body = r.json()
            self.exchanges.append(
                {
                    "method": request.method,
                    "path": request.url.path,
                    "query": request.url.query,
                    "status": r.status_code,
                    "body": body,
                }
            )
            return JSONResponse(body, r.status_code)

        app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server and self._thread:
            self._server.should_exit = True
            self._thread.join(10)

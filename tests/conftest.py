"""Test harness: a real embedded PostgreSQL (pgserver, pgvector) for the session, real
`hindsight serve` processes over HTTP, and the official MCP client."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
ADMIN_KEY = "test-admin-key-0123456789"
AUTH_EXT = "hindsight.extensions.builtin.tenant:ApiKeyTenantExtension"


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
        self.log_path = Path(os.environ.get("PYTEST_LOG_DIR", "/tmp")) / f"hindsight-test-{self.port}.log"

    def start(self, timeout: float = 60) -> "Server":
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hindsight.cli.main", "serve"], env=self.env, stdout=self.log, stderr=subprocess.STDOUT
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
        return self.proc.returncode

    def http(self, key: str | None = None, **headers) -> httpx.Client:
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    import pgserver

    srv = pgserver.get_server(tmp_path_factory.mktemp("pg") / "pgdata", cleanup_mode="stop")
    yield srv.get_uri()
    srv._cleanup()


@pytest.fixture(scope="session")
def server(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": pg_url}).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def auth_server(pg_url):
    s = Server({
        "HINDSIGHT_API_DATABASE_URL": pg_url,
        "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
        "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
    }).start()
    yield s
    s.stop()


@pytest.fixture
def api(server):
    with server.http() as c:
        yield c


@pytest.fixture
def bank():
    return "t_" + uuid.uuid4().hex[:12]


@contextlib.asynccontextmanager
async def mcp_session(url: str, headers: dict | None = None):
    """The official SDK client over Streamable HTTP."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or {}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client
